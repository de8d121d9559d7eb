//! A team's `models` list follows its team-owned deployments, as LiteLLM keeps it
//! (`_add_team_model_to_db` and `_update_existing_team_model_assignment` calling
//! `team_model_add` / `team_model_delete`, model_management_endpoints.py;
//! `add_new_models_to_team`, team_endpoints.py):
//!
//! - `/model/new` with `model_info.team_id` appends the public name to the team's `models`;
//!   an empty list (every model) becomes `["all-proxy-models", <public name>]`, so the team
//!   keeps every model it had;
//! - `/model/update` renaming the public name appends the new name and drops the old one once
//!   no other deployment of the team carries it;
//! - `/model/delete` drops the public name once no other deployment of the team carries it
//!   (LiteLLM drops only names it finds in a team model alias table it no longer writes, so
//!   there a deleted model's name stays in the list; Tollgate keeps the list as the
//!   deployments are).

use serde_json::Value;
use tollgate_governance::store::Team;

use crate::error::ApiResult;
use crate::write::Batch;
use crate::{AdminContext, live, model_teams, teams};

/// LiteLLM's name for "every model" in a `models` list (`SpecialModelNames.all_proxy_models`).
const ALL_PROXY_MODELS: &str = "all-proxy-models";

/// `(team_id, public name)` of a team-owned deployment (body or listed entry): the public name
/// is `model_info.team_public_model_name`, else `model_name`.
pub(crate) fn owner(entry: &Value) -> Option<(String, String)> {
    let team = model_teams::team_of(entry)?;
    let public = entry
        .pointer("/model_info/team_public_model_name")
        .and_then(Value::as_str)
        .or_else(|| entry.get("model_name").and_then(Value::as_str))
        .filter(|p| !p.is_empty())?;
    Some((team.to_owned(), public.to_owned()))
}

/// The listed deployment with this `model_info.id`'s [`owner`].
pub(crate) fn owner_of_id(ctx: &AdminContext, id: &str) -> Option<(String, String)> {
    ctx.models
        .list()
        .iter()
        .find(|e| e.pointer("/model_info/id").and_then(Value::as_str) == Some(id))
        .and_then(owner)
}

/// Updates the teams' lists after a team deployment went from `before` to `after` (either
/// `None` for no team deployment): the new public name added, the old one removed unless
/// another listed deployment of its team still carries it. A team that no longer exists is
/// left alone. Errors: 500 (store), 503 (counters).
pub(crate) async fn follow(
    ctx: &AdminContext,
    before: Option<(String, String)>,
    after: Option<(String, String)>,
) -> ApiResult<()> {
    if before == after {
        return Ok(());
    }
    if let Some((team, public)) = &after {
        change(ctx, team, |t| {
            if t.models.is_empty() {
                t.models.push(ALL_PROXY_MODELS.to_owned());
            }
            if !t.models.contains(public) {
                t.models.push(public.clone());
            }
        })
        .await?;
    }
    if let Some(old) = before {
        let carried = ctx
            .models
            .list()
            .iter()
            .any(|e| owner(e).as_ref() == Some(&old));
        if !carried {
            let (team, public) = old;
            change(ctx, &team, |t| t.models.retain(|m| m != &public)).await?;
        }
    }
    Ok(())
}

/// Applies `edit` to the cached team (live spend read first) and saves it when it changed.
async fn change(ctx: &AdminContext, team_id: &str, edit: impl FnOnce(&mut Team)) -> ApiResult<()> {
    let Ok(cached) = teams::cached(&ctx.gov, team_id) else {
        return Ok(());
    };
    let mut team = live::team_row(&ctx.gov, &cached).await?;
    let was = team.models.clone();
    edit(&mut team);
    if team.models == was {
        return Ok(());
    }
    team.updated_at = Some(ctx.gov.admission().now());
    Batch {
        teams: vec![team],
        ..Batch::default()
    }
    .commit(&ctx.gov)
    .await?;
    tracing::info!(team_id = %team_id, "team models follow its team deployments");
    Ok(())
}
