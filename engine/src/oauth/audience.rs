//! What a token is for, and where: the issuer (Toolgate's base URL) and the resources under it,
//! one tenant's MCP endpoint or the REST API.

use crate::model::TenantSlug;

/// What a token is for: one tenant's MCP endpoint, or the REST API (of the tenant the person
/// picks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Audience {
    Mcp(TenantSlug),
    Rest,
}

/// The base URL clients reach Toolgate at, which is the issuer and the prefix of every
/// resource: the public URL (`TOOLGATE_PUBLIC_URL`), or else `http://` and the request's host
/// (the MCP endpoint accepts only loopback hosts and the public URL's).
pub fn issuer(public_url: Option<&str>, headers: &http::HeaderMap) -> String {
    match public_url {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => {
            let host = headers.get(http::header::HOST).and_then(|h| h.to_str().ok());
            format!("http://{}", host.unwrap_or("localhost"))
        }
    }
}

/// The REST API's path, and the MCP endpoints' prefix.
pub const REST_PATH: &str = "/api/v1";
pub const MCP_PREFIX: &str = "/mcp/";

impl Audience {
    /// The audience `resource` names at `issuer` (the public base URL, no trailing slash).
    pub fn parse(resource: &str, issuer: &str) -> Option<Audience> {
        let head = resource.get(..issuer.len())?;
        if !head.eq_ignore_ascii_case(issuer) {
            return None;
        }
        let path = resource[issuer.len()..].trim_end_matches('/');
        if path == REST_PATH {
            return Some(Audience::Rest);
        }
        TenantSlug::parse(path.strip_prefix(MCP_PREFIX)?).ok().map(Audience::Mcp)
    }

    /// The canonical resource of this audience at `issuer`.
    pub fn resource(&self, issuer: &str) -> String {
        match self {
            Audience::Mcp(slug) => format!("{issuer}{MCP_PREFIX}{slug}"),
            Audience::Rest => format!("{issuer}{REST_PATH}"),
        }
    }

    /// Whether tokens for `resource` are for the REST API (else an MCP endpoint).
    pub fn is_rest(resource: &str) -> bool {
        resource.trim_end_matches('/').ends_with(REST_PATH)
    }

    /// The issuer a canonical `resource` was made at.
    pub(super) fn issuer_of(resource: &str) -> &str {
        match resource.find(MCP_PREFIX).or_else(|| resource.rfind(REST_PATH)) {
            Some(at) => &resource[..at],
            None => resource,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_name_an_endpoint_of_this_issuer() {
        let issuer = "http://127.0.0.1:3000";
        let acme = Audience::Mcp(TenantSlug::parse("acme").unwrap());
        assert_eq!(Audience::parse("http://127.0.0.1:3000/mcp/acme", issuer), Some(acme.clone()));
        assert_eq!(Audience::parse("http://127.0.0.1:3000/mcp/acme/", issuer), Some(acme.clone()));
        assert_eq!(Audience::parse("HTTP://127.0.0.1:3000/mcp/acme", issuer), Some(acme));
        assert_eq!(Audience::parse("http://127.0.0.1:3000/api/v1", issuer), Some(Audience::Rest));
        for other in [
            "http://evil.example/mcp/acme",
            "http://127.0.0.1:3000/mcp/",
            "http://127.0.0.1:3000/mcp/A_B",
            "http://127.0.0.1:3000",
        ] {
            assert_eq!(Audience::parse(other, issuer), None, "{other}");
        }
        assert_eq!(Audience::issuer_of("http://h:1/mcp/acme"), "http://h:1");
        assert_eq!(Audience::issuer_of("https://gate.example/tg/api/v1"), "https://gate.example/tg");
    }
}
