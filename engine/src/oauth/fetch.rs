//! Fetching a client's metadata document: an URL anyone may send, so the fetch is bounded
//! (5 s, [`MAX_DOCUMENT`] bytes, no redirects) and reaches public addresses only — names are
//! resolved here and private, loopback and link-local answers refused — unless private
//! addresses are allowed (development and tests).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use super::OAuthError;

/// The largest metadata document read (the CIMD draft recommends 5 KB).
const MAX_DOCUMENT: usize = 10 * 1024;

/// A document as fetched, with how long it may be used.
pub(super) struct Fetched {
    pub body: Vec<u8>,
    pub max_age: Option<Duration>,
}

pub(super) struct MetadataFetcher {
    http: reqwest::Client,
    allow_private: bool,
}

/// Whether `ip` is an address of the public internet.
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || a == 0
                || a >= 240
                || (a == 192 && b == 0 && v4.octets()[2] == 0)
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19)))
        }
        IpAddr::V6(v6) => {
            let segments = v6.segments();
            let embedded = |high: u16, low: u16| {
                IpAddr::V4(std::net::Ipv4Addr::from((u32::from(high) << 16) | u32::from(low)))
            };
            // An IPv4 address in IPv6 clothes is as public as the IPv4 address: mapped,
            // compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`). The
            // local-use NAT64 prefix (`64:ff9b:1::/48`, RFC 8215) leads into the local network.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            if segments[..6] == [0; 6] || segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                return is_public(embedded(segments[6], segments[7]));
            }
            if segments[..3] == [0x64, 0xff9b, 1] {
                return false;
            }
            if segments[0] == 0x2002 {
                return is_public(embedded(segments[1], segments[2]));
            }
            let first = segments[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
                // Teredo tunnels to any IPv4 address; documentation.
                || (first == 0x2001 && (segments[1] == 0 || segments[1] == 0x0db8)))
        }
    }
}

/// Resolves names to public addresses only.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                return Err(format!("{} resolves to no public address", name.as_str()).into());
            }
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

impl MetadataFetcher {
    pub(super) fn new(allow_private: bool) -> Self {
        // No proxy: through one, the addresses the resolver checks would not be the ones reached.
        let mut http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(3))
            .user_agent(concat!("toolgate/", env!("CARGO_PKG_VERSION")));
        if !allow_private {
            http = http.dns_resolver(Arc::new(PublicOnly));
        }
        MetadataFetcher { http: http.build().expect("a plain HTTP client builds"), allow_private }
    }

    /// Fetches the document of the client `id` (its URL), checked as the CIMD draft asks.
    pub(super) async fn fetch(&self, id: &str) -> Result<Fetched, OAuthError> {
        let refused = |why: String| OAuthError::refused("invalid_client", why);
        let url = self.checked_url(id).map_err(refused)?;
        let failed = |why: String| {
            refused(format!("the client's metadata document at {url} could not be fetched: {why}"))
        };
        let response =
            self.http.get(url.clone()).header("accept", "application/json").send().await.map_err(|err| {
                // Why exactly stays in the log: told to anyone, it would map the network (which
                // names resolve, which ports answer).
                tracing::info!(%url, error = ?err, "a client's metadata document could not be fetched");
                failed("it did not answer over https at a public address".into())
            })?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(failed(format!("answered {}", response.status())));
        }
        let json =
            response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(
                |v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")),
            );
        if !json {
            return Err(failed("its content type is not application/json".into()));
        }
        let max_age = cache_lifetime(response.headers());
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|err| failed(err.to_string()))?;
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(failed(format!("it is larger than {MAX_DOCUMENT} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { body, max_age })
    }

    /// `id` as a URL a client's id may be: https with a path, no fragment, no user, no dot
    /// segments; plain http and private addresses only when allowed (and then on loopback).
    fn checked_url(&self, id: &str) -> Result<reqwest::Url, String> {
        let url = reqwest::Url::parse(id)
            .map_err(|_| format!("client id `{}` is not a URL", super::clients::shown(id)))?;
        let path =
            id.split_once("://").map(|(_, rest)| rest.split_once('/').map_or("", |(_, p)| p)).unwrap_or("");
        let dots = path.split(['/', '?']).any(|segment| segment == "." || segment == "..");
        let local_http =
            url.scheme() == "http" && self.allow_private && super::clients::is_loopback_url(&url);
        if (url.scheme() != "https" && !local_http)
            || url.path() == "/"
            || url.fragment().is_some()
            || !url.username().is_empty()
            || url.password().is_some()
            || dots
        {
            return Err(format!(
                "client id `{}` is not a valid metadata document URL (https, with a path, no fragment or user)",
                super::clients::shown(id)
            ));
        }
        let literal = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if !self.allow_private && literal.is_some_and(|ip| !is_public(ip)) {
            return Err(format!("client id `{}` names a private address", super::clients::shown(id)));
        }
        Ok(url)
    }
}

/// `max-age` of the answer's Cache-Control (zero for `no-store` or `no-cache`).
fn cache_lifetime(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let control = headers.get(reqwest::header::CACHE_CONTROL)?.to_str().ok()?;
    let mut max_age = None;
    for directive in control.split(',').map(str::trim) {
        if directive.eq_ignore_ascii_case("no-store") || directive.eq_ignore_ascii_case("no-cache") {
            return Some(Duration::ZERO);
        }
        if let Some(seconds) = directive.strip_prefix("max-age=") {
            max_age = seconds.trim_matches('"').parse().ok().map(Duration::from_secs);
        }
    }
    max_age
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a01:203",
            "64:ff9b:1::5db8:d822",
            "2002:a01:203::",
            "2001::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:2800:220:1::1", "64:ff9b::5db8:d822", "2002:5db8:d822::"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn client_ids_must_be_https_documents() {
        let strict = MetadataFetcher::new(false);
        assert!(strict.checked_url("https://app.example/oauth/client.json").is_ok());
        for bad in [
            "http://app.example/client.json",
            "https://app.example/",
            "https://app.example/a#b",
            "https://user@app.example/c",
            "https://app.example/a/../c",
            "https://127.0.0.1/c.json",
            "https://[::1]/c.json",
        ] {
            assert!(strict.checked_url(bad).is_err(), "{bad}");
        }
        let local = MetadataFetcher::new(true);
        assert!(local.checked_url("http://127.0.0.1:8000/client.json").is_ok());
        assert!(local.checked_url("http://app.example/client.json").is_err());
    }

    #[test]
    fn cache_control_sets_the_lifetime() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::CACHE_CONTROL, "public, max-age=600".parse().unwrap());
        assert_eq!(cache_lifetime(&headers), Some(Duration::from_secs(600)));
        headers.insert(reqwest::header::CACHE_CONTROL, "no-store".parse().unwrap());
        assert_eq!(cache_lifetime(&headers), Some(Duration::ZERO));
    }
}
