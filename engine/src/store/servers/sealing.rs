//! A server's secrets at rest: sealed with the secret box for the target they were given for,
//! kept when an edit says `{set: true}`, opened only to connect.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use uuid::Uuid;

use super::{EnvValue, ServerConfig};
use crate::secret::SecretBox;
use crate::store::{Error, Result, SecretInput};

/// Where a server is; its stored secrets are for that target only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    url: Option<String>,
    command: Option<String>,
    args: Vec<String>,
    /// A relative command or argument names another program in another directory.
    cwd: Option<String>,
}

impl Target {
    pub(super) fn of(
        url: &Option<String>,
        command: &Option<String>,
        args: &[String],
        cwd: &Option<String>,
    ) -> Self {
        Target { url: url.clone(), command: command.clone(), args: args.to_vec(), cwd: cwd.clone() }
    }
}

/// A server's encrypted values as stored: what `{set: true}` keeps.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredSecrets {
    pub(super) env: Value,
    pub(super) headers: Value,
    /// An OAuth server's client secret.
    pub(super) client_secret: Option<String>,
    /// The target they were given for; `None` for a server not stored yet.
    pub(super) target: Option<Target>,
}

impl StoredSecrets {
    /// The secrets `config` may keep: none unless it is for the same target. A secret would
    /// otherwise follow the server to a new URL or command that an admin may not have meant
    /// to give it to, so `{set: true}` is refused then, saying to give the value again.
    pub(crate) fn kept_for(&self, config: &ServerConfig) -> Result<&StoredSecrets> {
        let moved = self.moved(config);
        let kept = config
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value))
            .chain(config.env.iter().filter_map(|(name, value)| match value {
                EnvValue::Secret(secret) => Some((name.as_str(), secret)),
                EnvValue::Plain(_) => None,
            }))
            .chain(
                config
                    .oauth
                    .iter()
                    .filter_map(|oauth| Some(("client_secret", oauth.client_secret.as_ref()?))),
            )
            .find(|(_, value)| value.new_value().is_none());
        match kept {
            Some((name, _)) if moved => Err(Error::Invalid(format!(
                "secret `{name}` must be given again: the server's URL, command or working directory changed, and a stored \
                 secret never follows its server to a new target"
            ))),
            _ => Ok(self),
        }
    }

    /// Whether `config` is for another target than the one these were given for.
    pub(crate) fn moved(&self, config: &ServerConfig) -> bool {
        self.target.as_ref().is_some_and(|target| *target != config.target())
    }

    pub(super) fn env_secret(&self, name: &str) -> Option<&str> {
        self.env.get(name)?.get("secret")?.as_str()
    }

    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.as_str()
    }
}

pub(super) fn seal_env(
    secrets: &SecretBox,
    env: &BTreeMap<String, EnvValue>,
    stored: &StoredSecrets,
) -> Result<Value> {
    let mut sealed = serde_json::Map::new();
    for (name, value) in env {
        let value = match value {
            EnvValue::Plain(plain) => json!(plain),
            EnvValue::Secret(secret) => {
                json!({ "secret": secret.seal(secrets, name, stored.env_secret(name))? })
            }
        };
        sealed.insert(name.clone(), value);
    }
    Ok(Value::Object(sealed))
}

pub(super) fn seal_headers(
    secrets: &SecretBox,
    headers: &BTreeMap<String, SecretInput>,
    stored: &StoredSecrets,
) -> Result<Value> {
    let mut sealed = serde_json::Map::new();
    for (name, value) in headers {
        sealed.insert(name.clone(), json!(value.seal(secrets, name, stored.header(name))?));
    }
    Ok(Value::Object(sealed))
}

pub(super) fn open(secrets: &SecretBox, sealed: &Value) -> Result<Vec<(String, String)>> {
    sealed
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, value)| {
            let plain = match value {
                Value::String(s) if s.starts_with("v1:") => secrets.decrypt(s),
                Value::String(s) => Ok(s.clone()),
                other => secrets.decrypt(other["secret"].as_str().unwrap_or_default()),
            };
            plain.map(|plain| (name.clone(), plain)).map_err(|err| Error::Invalid(format!("`{name}`: {err}")))
        })
        .collect()
}

/// What others gave a server for its target, which does not follow it to a new one: tenants'
/// own credentials, tenants' secret presets on its tools, the OAuth authorizations made at it
/// (and those being made). Described for the admin, in a stable order.
pub(crate) async fn given_for_target(conn: &mut sqlx::PgConnection, source_id: Uuid) -> Result<Vec<String>> {
    let credentials = sqlx::query_scalar!(
        "select t.slug from mcp_credential c join tenant t on t.id = c.tenant_id
         where c.source_id = $1 order by t.slug",
        source_id
    )
    .fetch_all(&mut *conn)
    .await?;
    let presets = sqlx::query!(
        r#"select t.slug, o.upstream_name, p.name as "preset!"
           from tool_override o join tenant t on t.id = o.tenant_id,
                jsonb_object_keys(o.secret_presets) as p(name)
           where o.source_id = $1 order by 1, 2, 3"#,
        source_id
    )
    .fetch_all(&mut *conn)
    .await?;
    let authorizations = sqlx::query_scalar!(
        r#"select count(*) as "count!" from mcp_authorization where source_id = $1"#,
        source_id
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(credentials
        .into_iter()
        .map(|tenant| format!("tenant `{tenant}`'s credentials"))
        .chain(presets.into_iter().map(|p| {
            format!("tenant `{}`'s secret preset `{}` of tool `{}`", p.slug, p.preset, p.upstream_name)
        }))
        .chain((authorizations > 0).then(|| match authorizations {
            1 => "1 OAuth authorization".to_string(),
            n => format!("{n} OAuth authorizations"),
        }))
        .collect())
}

/// Drops what [`given_for_target`] lists, and the authorizations being made: the server is
/// going to a new target. (Its authorizations go with its OAuth client, in `oauth::write`.)
pub(super) async fn drop_given_for_target(conn: &mut sqlx::PgConnection, source_id: Uuid) -> Result<()> {
    sqlx::query!("delete from mcp_credential where source_id = $1", source_id).execute(&mut *conn).await?;
    sqlx::query!(
        "update tool_override set secret_presets = '{}' where source_id = $1 and secret_presets <> '{}'",
        source_id
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query!("delete from mcp_authorization_flow where source_id = $1", source_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
