//! SVG plots (plotters, SVG backend: no system font libraries needed):
//! added p99 vs concurrency and RPS vs concurrency, one line per gateway.

use std::path::Path;

use plotters::prelude::*;

use crate::error::BenchError;

use super::summary::SummaryRow;

/// One line of a plot: a name and (concurrency, value) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend label.
    pub name: String,
    /// Points ordered by concurrency.
    pub points: Vec<(f64, f64)>,
    /// Palette index: `direct` is 0, gateways 1.. in sweep order, so a gateway
    /// has the same color in every plot.
    pub color: usize,
}

/// Lines of gateway added p99 (ms) by level.
pub fn added_p99_lines(rows: &[SummaryRow]) -> Vec<Line> {
    lines(rows, |r| r.added_p99_ms.map(|s| s.median))
}

/// Lines of RPS by level: one per gateway plus `direct` (median of the direct
/// runs paired with the first gateway at each level).
pub fn rps_lines(rows: &[SummaryRow]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut direct = Line {
        name: "direct".into(),
        points: Vec::new(),
        color: 0,
    };
    for r in rows {
        let x = r.level as f64;
        if !direct.points.iter().any(|p| p.0 == x) {
            direct.points.push((x, r.direct_rps.median));
        }
    }
    direct.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.push(direct);
    out.extend(lines(rows, |r| r.gateway_rps.map(|s| s.median)));
    out
}

fn lines(rows: &[SummaryRow], value: impl Fn(&SummaryRow) -> Option<f64>) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    for r in rows {
        let Some(v) = value(r) else { continue };
        let pos = match out.iter().position(|l| l.name == r.gateway) {
            Some(p) => p,
            None => {
                out.push(Line {
                    name: r.gateway.clone(),
                    points: Vec::new(),
                    color: 0,
                });
                out.len() - 1
            }
        };
        out[pos].points.push((r.level as f64, v));
    }
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.gateway.as_str()) {
            names.push(&r.gateway);
        }
    }
    for l in &mut out {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        l.color = 1 + names.iter().position(|n| *n == l.name).unwrap_or(0);
    }
    out
}

/// The lines whose values all stay within ±`limit`: a zoomed plot so that a
/// slow gateway does not flatten the fast ones.
pub fn within(lines: &[Line], limit: f64) -> Vec<Line> {
    lines
        .iter()
        .filter(|l| l.points.iter().all(|p| p.1.abs() <= limit))
        .cloned()
        .collect()
}

/// Draws `lines` into an SVG file; the concurrency axis is logarithmic (base 2).
///
/// Errors: [`BenchError::Report`] when drawing or writing fails.
pub fn draw(path: &Path, title: &str, y_desc: &str, lines: &[Line]) -> Result<(), BenchError> {
    draw_inner(path, title, y_desc, lines)
        .map_err(|e| BenchError::Report(format!("{}: {e}", path.display())))
}

fn draw_inner(
    path: &Path,
    title: &str,
    y_desc: &str,
    lines: &[Line],
) -> Result<(), Box<dyn std::error::Error>> {
    // The x axis is log2(concurrency) on a linear scale, labelled at powers of two.
    let lx = |x: f64| x.max(1.0).log2();
    let all: Vec<(f64, f64)> = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|&(x, y)| (lx(x), y)))
        .collect();
    let xhi = all.iter().map(|p| p.0).fold(0.0, f64::max);
    let ymin = all.iter().map(|p| p.1).fold(0.0, f64::min);
    let ymax = all.iter().map(|p| p.1).fold(0.0, f64::max);
    let pad = ((ymax - ymin) * 0.1).max(1e-3);
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.3f64..xhi + 0.3, (ymin - pad)..(ymax + pad))?;
    chart
        .configure_mesh()
        .x_desc("concurrency (requests in flight, log scale)")
        .y_desc(y_desc)
        .x_labels(xhi as usize + 2)
        .x_label_formatter(&|x| format!("{:.0}", x.exp2()))
        .draw()?;
    for l in lines {
        let color = Palette99::pick(l.color).to_rgba();
        let pts: Vec<(f64, f64)> = l.points.iter().map(|&(x, y)| (lx(x), y)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(l.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary::Spread;

    fn row(gw: &str, level: usize, added: f64, rps: f64) -> SummaryRow {
        SummaryRow {
            gateway: gw.into(),
            level,
            direct_rps: Spread {
                median: rps * 1.1,
                min: 0.0,
                max: 0.0,
            },
            gateway_rps: Some(Spread {
                median: rps,
                min: 0.0,
                max: 0.0,
            }),
            added_p99_ms: Some(Spread {
                median: added,
                min: 0.0,
                max: 0.0,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn lines_group_by_gateway_and_sort_by_level() {
        let rows = vec![
            row("a", 4, 0.2, 190.0),
            row("a", 1, 0.1, 48.0),
            row("b", 1, 0.3, 47.0),
        ];
        let l = added_p99_lines(&rows);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].points, vec![(1.0, 0.1), (4.0, 0.2)]);
        let r = rps_lines(&rows);
        assert_eq!(r[0].name, "direct");
        assert_eq!(r[0].points.len(), 2);
        assert_eq!(r[1].points, vec![(1.0, 48.0), (4.0, 190.0)]);
        // Colors follow the gateway, not the plot.
        assert_eq!((r[0].color, r[1].color, r[2].color), (0, 1, 2));
        assert_eq!((l[0].color, l[1].color), (1, 2));
        assert_eq!(within(&l, 0.25).len(), 1);
    }

    #[test]
    fn writes_an_svg_with_legend() {
        let dir = std::env::temp_dir().join(format!("tgb-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("added.svg");
        let rows = vec![
            row("tollgate", 1, 0.1, 48.0),
            row("tollgate", 64, 2.0, 3000.0),
        ];
        draw(&p, "added p99", "ms", &added_p99_lines(&rows)).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg.contains("tollgate"));
        assert!(svg.contains("<polyline") || svg.contains("<path"));
        if std::env::var_os("TGB_KEEP_PLOT").is_none() {
            std::fs::remove_dir_all(&dir).ok();
        }
    }
}
