//! Images between OpenAI image URLs (`image_url.url`, Responses `input_image.image_url`) and
//! Anthropic image sources. The gateway never fetches an image: `http(s)` URLs stay URLs
//! (Anthropic fetches them itself), `data:` URLs become base64 sources and back.

use std::borrow::Cow;

use base64::Engine as _;
use base64::alphabet::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Value, json};

use crate::TranslateError;

/// The media types Anthropic accepts for an image block (its vision docs): JPEG, PNG, GIF and
/// WebP.
pub const ANTHROPIC_IMAGE_MEDIA_TYPES: [&str; 4] =
    ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// A `data:` URL split into its parts (RFC 2397: `data:[<media type>][;param]*[;base64],<data>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataUrl<'a> {
    /// The media type, lowercased (`image/png`); empty when the URL names none.
    pub media_type: Cow<'a, str>,
    /// Whether the data is base64 (`;base64` before the comma).
    pub base64: bool,
    /// The text after the first comma, as written.
    pub data: &'a str,
}

/// Base64 as image data is read: RFC 4648's standard alphabet (`A-Z a-z 0-9 + /`, what RFC 2397
/// data URLs and Anthropic's base64 sources carry), `=` padding optional but only at the end,
/// and a last character's unused low bits not checked (encoders differ there; the bytes are the
/// same).
const IMAGE_BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Base64 characters checked per step of [`is_base64`] (a multiple of 4).
const BASE64_CHUNK: usize = 4096;

/// Whether `data` is base64 as [`IMAGE_BASE64`] reads it: decoded chunk by chunk into a buffer
/// on the stack and dropped, so nothing is allocated whatever the image's size. A space, a line
/// break, a URL-safe `-` / `_` or a `=` before the end makes it `false`.
pub fn is_base64(data: &str) -> bool {
    let mut buf = [0u8; BASE64_CHUNK / 4 * 3];
    let mut chunks = data.as_bytes().chunks(BASE64_CHUNK).peekable();
    while let Some(chunk) = chunks.next() {
        // A chunk ending in padding decodes on its own; it is valid only as the last one.
        if chunks.peek().is_some() && chunk.last() == Some(&b'=') {
            return false;
        }
        if IMAGE_BASE64.decode_slice(chunk, &mut buf).is_err() {
            return false;
        }
    }
    true
}

/// What [`is_base64`] takes, for error messages.
const NOT_BASE64: &str = "the data is not base64 (A-Z, a-z, 0-9, + and /, with = padding only at the end; no spaces or line breaks)";

/// Whether `url` is a `data:` URL (scheme compared without case, as RFC 3986 says).
pub fn is_data_url(url: &str) -> bool {
    url.get(..5)
        .is_some_and(|s| s.eq_ignore_ascii_case("data:"))
}

/// Splits a `data:` URL; `None` when `url` is not one or has no comma.
pub fn parse_data_url(url: &str) -> Option<DataUrl<'_>> {
    if !is_data_url(url) {
        return None;
    }
    let (meta, data) = url[5..].split_once(',')?;
    let mut params = meta.split(';');
    let media_type = params.next().unwrap_or_default().trim();
    let base64 = meta
        .rsplit(';')
        .next()
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("base64"))
        && meta.contains(';');
    let media_type = if media_type.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(media_type.to_ascii_lowercase())
    } else {
        Cow::Borrowed(media_type)
    };
    Some(DataUrl {
        media_type,
        base64,
        data,
    })
}

/// The Anthropic name of an image media type: one of [`ANTHROPIC_IMAGE_MEDIA_TYPES`], with
/// the common non-standard `image/jpg` (any case) as `image/jpeg`; `None` for anything else.
pub fn anthropic_image_media_type(media_type: &str) -> Option<&'static str> {
    if media_type.eq_ignore_ascii_case("image/jpg") {
        return Some("image/jpeg");
    }
    ANTHROPIC_IMAGE_MEDIA_TYPES
        .into_iter()
        .find(|t| t.eq_ignore_ascii_case(media_type))
}

/// The Anthropic image `source` for an OpenAI image URL:
/// - `data:<type>;base64,<data>` → `{"type":"base64","media_type","data"}`, the media type
///   normalised by [`anthropic_image_media_type`];
/// - `http://` / `https://` → `{"type":"url","url"}`, unchanged.
///
/// Errors (400, naming `field`): a malformed `data:` URL (no comma, not `;base64`, no data, no
/// media type, data that is not base64: [`is_base64`]) or any other scheme ([`TranslateError::InvalidRequest`]); a media type Anthropic
/// does not accept, e.g. `image/bmp` ([`TranslateError::Unsupported`]).
pub fn anthropic_image_source(url: &str, field: &str) -> Result<Value, TranslateError> {
    if let Some(d) = image_data_url(url, field)? {
        let Some(media_type) = anthropic_image_media_type(&d.media_type) else {
            return Err(TranslateError::unsupported(
                field,
                format!(
                    "image media type `{}` is not accepted by Anthropic (accepted: {})",
                    d.media_type,
                    ANTHROPIC_IMAGE_MEDIA_TYPES.join(", ")
                ),
            ));
        };
        return Ok(json!({"type": "base64", "media_type": media_type, "data": d.data}));
    }
    let scheme = url.split_once("://").map(|(s, _)| s);
    if scheme.is_some_and(|s| s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https")) {
        return Ok(json!({"type": "url", "url": url}));
    }
    Err(TranslateError::invalid(
        field,
        "an image must be an http(s) URL or a base64 data URL (data:image/png;base64,...)",
    ))
}

/// Checks that an image URL which is a `data:` URL is a well-formed base64 one (any media
/// type); other URLs pass. Errors: [`TranslateError::InvalidRequest`] naming `field`, as for
/// [`anthropic_image_source`].
pub fn check_data_url(url: &str, field: &str) -> Result<(), TranslateError> {
    image_data_url(url, field).map(|_| ())
}

/// `Ok(None)` for a URL that is not `data:`; the parsed URL when it is a well-formed base64
/// one with a media type; a 400 otherwise.
fn image_data_url<'u>(url: &'u str, field: &str) -> Result<Option<DataUrl<'u>>, TranslateError> {
    if !is_data_url(url) {
        return Ok(None);
    }
    let Some(d) = parse_data_url(url) else {
        return Err(malformed(field, "it has no comma before the data"));
    };
    if !d.base64 {
        return Err(malformed(field, "only base64 data URLs carry images"));
    }
    if d.data.is_empty() {
        return Err(malformed(field, "the data after the comma is empty"));
    }
    if d.media_type.is_empty() {
        return Err(malformed(field, "it names no media type"));
    }
    if !is_base64(d.data) {
        return Err(malformed(field, NOT_BASE64));
    }
    Ok(Some(d))
}

/// The OpenAI image URL for an Anthropic image `source`: a base64 source → a `data:` URL (an
/// `image/jpg` media type written as `image/jpeg`), a url source → its URL.
///
/// Errors (400, naming `field` + `.source...`): a base64 source without `media_type` or `data`,
/// or whose `data` is not base64 ([`is_base64`]), a url source without `url`
/// ([`TranslateError::InvalidRequest`]); other source types such as `file`
/// ([`TranslateError::Unsupported`]).
pub fn openai_image_url(source: &Value, field: &str) -> Result<String, TranslateError> {
    let text = |key: &str| {
        source
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                TranslateError::invalid(format!("{field}.source.{key}"), "Field required")
            })
    };
    match source.get("type").and_then(Value::as_str) {
        Some("base64") => {
            let media_type = text("media_type")?;
            let media_type = anthropic_image_media_type(media_type).unwrap_or(media_type);
            let data = text("data")?;
            if !is_base64(data) {
                return Err(TranslateError::invalid(
                    format!("{field}.source.data"),
                    NOT_BASE64,
                ));
            }
            Ok(format!("data:{media_type};base64,{data}"))
        }
        Some("url") => Ok(text("url")?.to_owned()),
        _ => Err(TranslateError::unsupported(
            format!("{field}.source.type"),
            "only base64 and url image sources translate to OpenAI",
        )),
    }
}

fn malformed(field: &str, why: &str) -> TranslateError {
    TranslateError::invalid(
        field,
        format!("malformed data URL ({why}); expected data:<media type>;base64,<data>"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_urls_split_into_type_and_data() {
        let d = parse_data_url("data:image/png;base64,AAAA").unwrap();
        assert_eq!(
            (d.media_type.as_ref(), d.base64, d.data),
            ("image/png", true, "AAAA")
        );
        let d = parse_data_url("DATA:Image/PNG;name=a.png;BASE64,AA==").unwrap();
        assert_eq!(
            (d.media_type.as_ref(), d.base64, d.data),
            ("image/png", true, "AA==")
        );
        let d = parse_data_url("data:text/plain,hi").unwrap();
        assert_eq!(
            (d.media_type.as_ref(), d.base64, d.data),
            ("text/plain", false, "hi")
        );
        assert_eq!(parse_data_url("https://x/y.png"), None);
        assert_eq!(parse_data_url("data:image/png;base64"), None);
    }

    #[test]
    fn media_types_anthropic_accepts() {
        for (given, want) in [
            ("image/jpg", Some("image/jpeg")),
            ("IMAGE/JPG", Some("image/jpeg")),
            ("image/jpeg", Some("image/jpeg")),
            ("Image/Png", Some("image/png")),
            ("image/gif", Some("image/gif")),
            ("image/webp", Some("image/webp")),
            ("image/bmp", None),
            ("image/svg+xml", None),
        ] {
            assert_eq!(anthropic_image_media_type(given), want, "{given}");
        }
    }

    #[test]
    fn image_urls_become_anthropic_sources() {
        let f = "messages[0].content[1].image_url.url";
        assert_eq!(
            anthropic_image_source("data:image/jpg;base64,/9j/4AAQ", f).unwrap(),
            json!({"type":"base64","media_type":"image/jpeg","data":"/9j/4AAQ"})
        );
        assert_eq!(
            anthropic_image_source("https://example.com/cat.JPG?x=1", f).unwrap(),
            json!({"type":"url","url":"https://example.com/cat.JPG?x=1"})
        );
        assert_eq!(
            anthropic_image_source("HTTP://example.com/a.png", f).unwrap()["type"],
            "url"
        );
        for bad in [
            "data:image/png;base64",
            "data:image/png,AAAA",
            "data:image/png;base64,",
            "data:;base64,AAAA",
            "file:///etc/passwd",
            "ftp://x/y.png",
            "cat.png",
        ] {
            let e = anthropic_image_source(bad, f).unwrap_err();
            assert_eq!((e.status(), e.param()), (400, Some(f)), "{bad}");
            assert!(matches!(e, TranslateError::InvalidRequest { .. }), "{bad}");
        }
        assert!(check_data_url("data:image/bmp;base64,Qk0=", f).is_ok());
        assert!(check_data_url("https://x/y", f).is_ok());
        assert_eq!(
            check_data_url("data:image/png,AAAA", f)
                .unwrap_err()
                .param(),
            Some(f)
        );
        let e = anthropic_image_source("data:image/bmp;base64,Qk0=", f).unwrap_err();
        assert!(e.to_string().contains("`image/bmp` is not accepted"), "{e}");
        assert_eq!(e.param(), Some(f));
    }

    #[test]
    fn base64_alphabet_and_padding() {
        for ok in [
            "AAAA",
            "AA==",
            "AA=",
            "AA",
            "/9j/4AAQ",
            "iVBORw0KGgo=",
            "+/+/",
        ] {
            assert!(is_base64(ok), "{ok}");
        }
        for bad in [
            "!!!notb64",
            "A",
            "AAAAA",
            "AA==AA==",
            "A===",
            "AA AA",
            "AAAA\nAAAA",
            "-_-_",
            "AA%3D",
        ] {
            assert!(!is_base64(bad), "{bad}");
        }
        // Across the chunk boundary: padding before the last chunk is refused, and a long
        // valid payload passes.
        let long = "QUJD".repeat(BASE64_CHUNK);
        assert!(is_base64(&long));
        let mut padded_early = "A".repeat(BASE64_CHUNK - 2);
        padded_early.push_str("==");
        padded_early.push_str("AAAA");
        assert!(!is_base64(&padded_early));
        let mut bad_late = long.clone();
        bad_late.push('!');
        assert!(!is_base64(&bad_late));
    }

    #[test]
    fn data_that_is_not_base64_is_refused_naming_the_field() {
        let f = "messages[0].content[1].image_url.url";
        for bad in [
            "data:image/png;base64,!!!notb64",
            "data:image/png;base64,AA AA",
        ] {
            let e = anthropic_image_source(bad, f).unwrap_err();
            assert_eq!((e.status(), e.param()), (400, Some(f)), "{bad}");
            assert!(e.to_string().contains("the data is not base64"), "{e}");
            let e = check_data_url(bad, f).unwrap_err();
            assert_eq!(e.param(), Some(f), "{bad}");
        }
        let e = openai_image_url(
            &json!({"type":"base64","media_type":"image/png","data":"!!!notb64"}),
            "messages[0].content[0]",
        )
        .unwrap_err();
        assert_eq!(e.param(), Some("messages[0].content[0].source.data"));
        assert!(e.to_string().contains("the data is not base64"), "{e}");
    }

    #[test]
    fn anthropic_sources_become_image_urls() {
        let f = "messages[0].content[0]";
        assert_eq!(
            openai_image_url(
                &json!({"type":"base64","media_type":"image/jpg","data":"AA"}),
                f
            )
            .unwrap(),
            "data:image/jpeg;base64,AA"
        );
        assert_eq!(
            openai_image_url(
                &json!({"type":"base64","media_type":"image/png","data":"AA"}),
                f
            )
            .unwrap(),
            "data:image/png;base64,AA"
        );
        assert_eq!(
            openai_image_url(&json!({"type":"url","url":"https://x/a.png"}), f).unwrap(),
            "https://x/a.png"
        );
        let e = openai_image_url(&json!({"type":"base64","data":"AA"}), f).unwrap_err();
        assert_eq!(e.param(), Some("messages[0].content[0].source.media_type"));
        let e = openai_image_url(&json!({"type":"file","file_id":"f"}), f).unwrap_err();
        assert_eq!(e.param(), Some("messages[0].content[0].source.type"));
    }
}
