//! A server's settings as an administrator gives them (the admin API, the panel, the
//! configuration document), and the rules they must keep.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::OAuthSettings;
use super::sealing::{StoredSecrets, Target};
use crate::model::{Name, Tag, TenantSlug, yes};
use crate::store::{Error, Result, SecretInput};

/// How a server is reached; stored as text (a value the database's check does not know fails
/// the read, never turns into another transport).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum Transport {
    StreamableHttp,
    /// Legacy HTTP+SSE.
    Sse,
    Stdio,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable_http",
            Transport::Sse => "sse",
            Transport::Stdio => "stdio",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, sqlx::Type)]
#[serde(rename_all = "snake_case")]
#[sqlx(type_name = "text", rename_all = "snake_case")]
pub enum OnDefinitionChange {
    /// Hide the tool until an admin approves the new definition.
    #[default]
    Hold,
    /// Keep serving the pinned definition until an admin approves the new one.
    KeepPinned,
}

/// An environment value of a stdio server: plain text, or a secret stored encrypted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EnvValue {
    Plain(String),
    Secret(SecretInput),
}

/// A server as an admin registers it, and as the configuration document shows it (secrets
/// as `{set: true}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub name: Name,
    /// Exposed names are `<prefix>_<tool>`; left out = the server's name; "" keeps the
    /// upstream names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    pub transport: Transport,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A stdio server's working directory, an absolute path; left out = Toolgate's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, EnvValue>,
    /// Sent with every request (an `Authorization: Bearer ...` among them); always encrypted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, SecretInput>,
    /// A server protected by OAuth: Toolgate is its client, and whose token a call uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthSettings>,
    /// `None` = shared by every tenant.
    #[serde(default)]
    pub tenant: Option<TenantSlug>,
    #[serde(default)]
    pub tags: Vec<Tag>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub on_definition_change: OnDefinitionChange,
    /// Whether tools that appear after the first discovery are served before an admin looks.
    #[serde(default)]
    pub new_tools_enabled: bool,
}

impl ServerConfig {
    fn new(name: Name, transport: Transport) -> Self {
        ServerConfig {
            name,
            prefix: None,
            transport,
            url: None,
            command: None,
            args: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
            oauth: None,
            tenant: None,
            tags: Vec::new(),
            enabled: true,
            on_definition_change: OnDefinitionChange::Hold,
            new_tools_enabled: false,
        }
    }

    /// A shared streamable HTTP server with every other setting at its default.
    pub fn http(name: Name, url: impl Into<String>) -> Self {
        ServerConfig { url: Some(url.into()), ..Self::new(name, Transport::StreamableHttp) }
    }

    /// A shared legacy HTTP+SSE server (`url` is its SSE stream) with every other setting at
    /// its default.
    pub fn sse(name: Name, url: impl Into<String>) -> Self {
        ServerConfig { url: Some(url.into()), ..Self::new(name, Transport::Sse) }
    }

    /// A shared stdio server with every other setting at its default.
    pub fn stdio(name: Name, command: impl Into<String>, args: Vec<String>) -> Self {
        ServerConfig { command: Some(command.into()), args, ..Self::new(name, Transport::Stdio) }
    }

    pub fn prefix(&self) -> &str {
        self.prefix.as_deref().unwrap_or(self.name.as_str())
    }

    pub(crate) fn check(&self) -> Result<()> {
        crate::model::check_prefix(self.prefix())?;
        match (&self.cwd, self.transport) {
            (None, _) => {}
            (Some(_), Transport::StreamableHttp | Transport::Sse) => {
                return Err(Error::Invalid("only a stdio server has a working directory (`cwd`)".into()));
            }
            (Some(cwd), Transport::Stdio) if !std::path::Path::new(cwd).is_absolute() => {
                return Err(Error::Invalid(format!(
                    "the working directory `{cwd}` must be an absolute path (one starting with /)"
                )));
            }
            (Some(_), Transport::Stdio) => {}
        }
        if let Some(oauth) = &self.oauth {
            oauth.check(self)?;
        }
        match (self.transport, &self.url, &self.command) {
            (Transport::Stdio, None, Some(command)) if !command.is_empty() => Ok(()),
            (Transport::Stdio, _, _) => {
                Err(Error::Invalid("a stdio server needs a command and no url".into()))
            }
            (_, Some(url), None) if url.starts_with("http://") || url.starts_with("https://") => Ok(()),
            _ => Err(Error::Invalid("an HTTP server needs an http:// or https:// url and no command".into())),
        }
    }

    /// Where the server is: its URL, or its command and arguments. Stored secrets belong to it.
    pub(super) fn target(&self) -> Target {
        Target::of(&self.url, &self.command, &self.args, &self.cwd)
    }

    /// The configuration as a diff shows it: prefix filled in, secrets as `{set: true}`
    /// (plus `changed: true` where a new value is given).
    pub(crate) fn redacted(&self, stored: Option<&StoredSecrets>) -> Result<Value> {
        let mut shown = serde_json::to_value(ServerConfig {
            prefix: Some(self.prefix().to_owned()),
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
            oauth: None,
            ..self.clone()
        })
        .expect("configs serialise");
        let empty = StoredSecrets::default();
        let stored = stored.unwrap_or(&empty).kept_for(self)?;
        let mut env = serde_json::Map::new();
        for (name, value) in &self.env {
            let shown = match value {
                EnvValue::Plain(plain) => json!(plain),
                EnvValue::Secret(secret) => secret.redact(name, stored.env_secret(name))?,
            };
            env.insert(name.clone(), shown);
        }
        let mut headers = serde_json::Map::new();
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.redact(name, stored.header(name))?);
        }
        shown["env"] = Value::Object(env);
        shown["headers"] = Value::Object(headers);
        if let Some(oauth) = &self.oauth {
            shown["oauth"] = oauth.redacted(stored.client_secret.as_deref())?;
        }
        Ok(shown)
    }
}
