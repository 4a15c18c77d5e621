"""An MCP client that signs in with OAuth: the official Python SDK's OAuthClientProvider
against Toolgate's authorization server, with no key anywhere.

Usage: oauth_client.py <auto|legacy> <endpoint url> <username> <password>
The SDK follows the 401 to the protected resource metadata, discovers the authorization
server, registers itself (RFC 7591), and sends the person to the authorization URL with PKCE
and `resource`. The person's side is played over HTTP here: sign in on Toolgate's sign-in
page, approve on its consent page. Then it lists and calls tools, waits past the access
token's lifetime (the test starts Toolgate with 10 s) and calls again with a refreshed token,
prints `revoke-me` and waits for `revoked` on stdin (the test revokes the app as its person
would, in Connected apps), and checks that the next call is refused and the SDK asks the
person to sign in again. Exits non-zero with a message on any difference.
"""

import asyncio
import sys
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

EXPECTED_VERSION = {"auto": "2026-07-28", "legacy": "2025-11-25"}
REDIRECT = "http://127.0.0.1:53682/callback"


class Memory:
    """The SDK's token storage, in memory."""

    tokens = None
    client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client):
        self.client = client


class Person:
    """The person at the browser: signs in to Toolgate and approves the app."""

    def __init__(self, base: str, username: str, password: str):
        self.base, self.username, self.password = base, username, password
        self.result = None
        self.sign_ins = 0
        self.refuse = False

    async def open(self, authorization_url: str) -> None:
        if self.refuse:
            raise PermissionError("the app was revoked: asked to sign in again")
        self.sign_ins += 1
        async with httpx2.AsyncClient(follow_redirects=False, headers={"origin": self.base}, timeout=30) as browser:
            asked = await browser.get(authorization_url)
            assert asked.status_code == 303, f"authorization: {asked.status_code} {asked.text}"
            consent = asked.headers["location"]
            assert consent.startswith("/authorize/"), consent
            login = await browser.post(
                f"{self.base}/api/login",
                data={"username": self.username, "password": self.password, "next": consent},
            )
            assert login.status_code in (200, 302, 303), f"sign-in: {login.status_code} {login.text}"
            shown = await browser.post(f"{self.base}/api/consent", data={"id": consent.rsplit("/", 1)[1]})
            assert shown.status_code == 200 and shown.json()["allowed"], shown.text
            decided = await browser.post(
                f"{self.base}/api/decide", data={"id": consent.rsplit("/", 1)[1], "approve": "true"}
            )
            assert decided.status_code == 200, f"consent: {decided.status_code} {decided.text}"
            back = decided.json()
        assert back.startswith(REDIRECT), back
        query = {name: values[0] for name, values in parse_qs(urlparse(back).query).items()}
        self.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    async def callback(self) -> AuthorizationCodeResult:
        return self.result


def signing_in(url: str, username: str, password: str, client_name: str, storage: Memory):
    """The SDK's OAuth provider for the endpoint `url`, registering as `client_name`, and the
    person who signs in at its browser step."""
    person = Person(f"{urlparse(url).scheme}://{urlparse(url).netloc}", username, password)
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name=client_name,
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.open,
        callback_handler=person.callback,
    )
    return person, provider


def mentions(error: BaseException, text: str) -> bool:
    """Whether `error`, a group of errors or any of their causes says `text`."""
    if text in str(error):
        return True
    inner = list(getattr(error, "exceptions", ())) + [e for e in (error.__cause__, error.__context__) if e]
    return any(mentions(e, text) for e in inner)


async def main(mode: str, url: str, username: str, password: str) -> None:
    storage = Memory()
    person, provider = signing_in(url, username, password, f"Python SDK ({mode})", storage)
    http = httpx2.AsyncClient(auth=provider, timeout=30)
    client = Client(streamable_http_client(url, http_client=http), mode=mode)
    try:
        async with http, client:
            version = client.protocol_version
            assert version == EXPECTED_VERSION[mode], f"{mode} mode negotiated {version}"
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert "write_text_file" in tools, sorted(tools)
            written = await client.call_tool("write_text_file", {"path": f"oauth-{mode}.txt", "content": "by a person"})
            assert not written.is_error, written
            first = storage.tokens.access_token

            # Past the access token's lifetime the SDK refreshes it (rotating the refresh token).
            await asyncio.sleep(storage.tokens.expires_in + 1)
            again = await client.call_tool("view_text_file", {"path": f"oauth-{mode}.txt"})
            assert "by a person" in "".join(b.text for b in again.content if b.type == "text"), again
            assert storage.tokens.access_token != first, "the token was not refreshed"
            assert person.sign_ins == 1, "signed in more than once before the revocation"

            person.refuse = True
            print("revoke-me", flush=True)
            assert (await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)).strip() == "revoked"
            await client.list_tools()
            raise AssertionError("a revoked app still listed tools")
    except BaseException as ended:  # the SDK's re-authorization fails in the person's redirect handler
        if not mentions(ended, "asked to sign in again"):
            raise
    print(f"ok: {mode} mode; signed in, called, refreshed, refused after revocation")


if __name__ == "__main__":
    mode, url, username, password = sys.argv[1:5]
    asyncio.run(asyncio.wait_for(main(mode, url, username, password), timeout=90))
