// A real OpenID provider for the tests (oidc-provider, with its development sign-in screens: any
// password, the login name is the subject and the email). Usage:
//   node openid-provider.mjs '{"clients": [...], "groups": {"olive@acme.test": ["owners"]}, "host": "localhost"}'
// It listens on 127.0.0.1; `host` names it in the issuer (`localhost` makes it another site than
// a Toolgate on 127.0.0.1, as a real provider is). Prints {"issuer": "http://<host>:<port>"}
// once listening; exits on SIGTERM.
import * as http from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';

const config = JSON.parse(process.argv[2] ?? '{}');
const groups = config.groups ?? {};

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
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  // No consent screen of the provider's own: Toolgate is a trusted first-party client here.
  async loadExistingGrant(ctx) {
    const { oidc } = ctx;
    const grant = new oidc.provider.Grant({ clientId: oidc.client.clientId, accountId: oidc.session.accountId });
    grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(' '));
    grant.addOIDCClaims([...oidc.requestParamClaims]);
    await grant.save();
    return grant;
  },
  renderError(ctx, out) {
    ctx.type = 'json';
    ctx.body = out;
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

server.on('request', provider.callback());
process.stdout.write(`${JSON.stringify({ issuer })}\n`);
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.closeAllConnections();
    process.exit(0);
  });
}
