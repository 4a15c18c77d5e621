"""A FastMCP 4 server protected by OAuth, for Toolgate to front as an upstream.

Usage: protected_server.py <issuer> <port>
It reads the authorization server metadata of <issuer> (the test OpenID provider started with
`resources`), accepts only RS256 JWT access tokens from it whose audience is its own URL, and
serves streamable HTTP at http://127.0.0.1:<port>/mcp, with its protected resource metadata
(RFC 9728) at /.well-known/oauth-protected-resource/mcp. Port 0 picks a free port. Prints
`listening http://127.0.0.1:<port>/mcp` (that URL is the resource and token audience) once
it accepts connections.
"""

import json
import socket
import sys
import urllib.request

import anyio
from fastmcp import FastMCP
from fastmcp.server.auth import RemoteAuthProvider
from fastmcp.server.auth.providers.jwt import JWTVerifier
from fastmcp.server.dependencies import get_access_token

SCOPE = "mcp:tools"


def main() -> None:
    issuer, port = sys.argv[1].rstrip("/"), int(sys.argv[2])
    with urllib.request.urlopen(f"{issuer}/.well-known/oauth-authorization-server") as response:
        metadata = json.load(response)

    # Bound before the server is built: the resource URL names the port.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}"
    resource = f"{base_url}/mcp"

    verifier = JWTVerifier(
        jwks_uri=metadata["jwks_uri"],
        issuer=metadata["issuer"],
        audience=resource,
        algorithm="RS256",
    )
    auth = RemoteAuthProvider(
        token_verifier=verifier,
        authorization_servers=[metadata["issuer"]],
        base_url=base_url,
        scopes_supported=[SCOPE],
        resource_name="protected-upstream",
    )
    server = FastMCP("protected-upstream", auth=auth)

    @server.tool
    def whoami() -> str:
        """The subject of the access token this call came with."""
        token = get_access_token()
        return token.claims.get("sub", "") if token else ""

    # The socket already listens: connections made from now on wait in its backlog.
    print(f"listening {resource}", flush=True)
    anyio.run(
        lambda: server.run_http_async(
            transport="http",
            host="127.0.0.1",
            port=port,
            path="/mcp",
            sockets=[sock],
            show_banner=False,
            # Only the line above on stdout; uvicorn's access log would go there too.
            uvicorn_config={"access_log": False},
        )
    )


if __name__ == "__main__":
    main()
