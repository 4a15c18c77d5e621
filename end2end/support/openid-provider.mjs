// A real OpenID provider for the tests (oidc-provider, with its development sign-in screens: any
// password, the login name is the subject and the email). Usage:
//   node openid-provider.mjs '{"clients": [...], "groups": {"olive@acme.test": ["owners"]}, "host": "localhost"}'
// It listens on 127.0.0.1; `host` names it in the issuer (`localhost` makes it another site than
// a Toolgate on 127.0.0.1, as a real provider is). Prints {"issuer": "http://<host>:<port>"}
// once listening; exits on SIGTERM.
// With `"resources": {"accessTokenSeconds": N}` it is also the authorization server of MCP servers:
// any http(s) `resource` (RFC 8707) gets RS256 JWT access tokens with that audience, N seconds of
// life and the scope `mcp:tools` when asked for (a code request must ask for some scope); dynamic
// registration (RFC 7591), client credentials (the subject is the client id), revocation (RFC 7009),
// a refresh token for every code exchange (no `offline_access` needed) and no consent screen, for
// native clients either. Metadata is at /.well-known/oauth-authorization-server (RFC 8414) too.
// `POST /admin/revoke?sub=<login>` revokes a person's refresh tokens, as an administrator would.
import * as http from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider, { errors, interactionPolicy } from 'oidc-provider';

const config = JSON.parse(process.argv[2] ?? '{}');
const groups = config.groups ?? {};
const resources = config.resources;
const RESOURCE_SCOPE = 'mcp:tools';

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://${config.host ?? '127.0.0.1'}:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: (config.clients ?? []).map((client) => ({
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...client,
  })),
  jwks: { keys: [key] },
  cookies: { keys: [randomUUID()] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
  // The claims of the scopes asked for go into the ID token (Toolgate reads them there).
  conformIdTokenClaims: false,
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { sub, email: sub, email_verified: true, name: sub.split('@')[0], groups: groups[sub] ?? [] };
      },
    };
  },
  features: { devInteractions: { enabled: true }, ...(resources && resourceFeatures(resources)) },
  ...(resources && {
    scopes: ['openid', 'offline_access', RESOURCE_SCOPE],
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { policy: nativeConsentGranted() },
  }),
  pkce: { required: () => true },
  // No consent screen of the provider's own: Toolgate is a trusted first-party client here.
  async loadExistingGrant(ctx) {
    const { oidc } = ctx;
    const grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
    grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
    grant.addOIDCClaims([...oidc.requestParamClaims]);
    if (resources) {
      for (const resource of [oidc.params.resource ?? []].flat()) grant.addResourceScope(resource, RESOURCE_SCOPE);
    }
    await grant.save();
    return grant;
  },
  renderError(ctx, out) {
    ctx.type = 'json';
    ctx.body = out;
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

// What a provider's administrator does to a person's access (`POST /admin/revoke?sub=<login>`):
// every refresh token issued to them stops working.
const refreshTokens = new Map();
provider.on('refresh_token.saved', (token) => {
  refreshTokens.set(token.accountId, [...(refreshTokens.get(token.accountId) ?? []), token]);
});
const answer = provider.callback();
server.on('request', async (req, res) => {
  const url = new URL(req.url, issuer);
  if (resources && req.method === 'POST' && url.pathname === '/admin/revoke') {
    const sub = url.searchParams.get('sub');
    await Promise.all((refreshTokens.get(sub) ?? []).map((token) => token.destroy()));
    refreshTokens.delete(sub);
    res.writeHead(204).end();
    return;
  }
  answer(req, res);
});

/** The base policy without the consent native clients otherwise always ask (the grant is auto-consented). */
function nativeConsentGranted() {
  const policy = interactionPolicy.base();
  policy.get('consent').checks.remove('native_client_prompt');
  return policy;
}

/** The features that make the provider the authorization server of MCP resource servers. */
function resourceFeatures({ accessTokenSeconds = 3600 }) {
  return {
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => (oneOf?.length === 1 ? oneOf[0] : oneOf),
      useGrantedResource: async () => true,
      async getResourceServerInfo(ctx, resource) {
        if (!/^https?:$/.test(URL.parse(resource)?.protocol)) throw new errors.InvalidTarget();
        return {
          scope: RESOURCE_SCOPE,
          audience: resource,
          accessTokenTTL: accessTokenSeconds,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    revocation: { enabled: true },
  };
}

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.closeAllConnections();
    process.exit(0);
  });
}
