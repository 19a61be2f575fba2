// The OpenID Connect provider the tests sign in through: the certified `oidc-provider` package
// (npm, pinned in package.json), on 127.0.0.1 only, with a simple login form and static
// accounts read from a JSON file at every sign-in (a test edits it to change someone's groups).
// Started by scripts/services/oidc.sh; never used in production (the institution's IdP is).
//
// Environment: OIDC_PORT, OIDC_STATE_DIR (keys and the client secret persist there),
// OIDC_ACCOUNTS_FILE, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import querystring from 'node:querystring';

import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT || 9090);
const stateDir = process.env.OIDC_STATE_DIR;
const accountsFile = process.env.OIDC_ACCOUNTS_FILE;
const issuer = `http://127.0.0.1:${port}`;

// Signing key and cookie keys made once and kept, so a restart does not invalidate sessions.
function persisted(name, make) {
  const file = path.join(stateDir, name);
  if (!fs.existsSync(file)) fs.writeFileSync(file, JSON.stringify(make()), { mode: 0o600 });
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}
const signingKey = persisted('jwks.json', () => {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'RS256' };
});
const cookieKeys = persisted('cookie-keys.json', () => [crypto.randomBytes(32).toString('hex')]);

// {"alice": {"password": "...", "email": ..., "email_verified": true, "groups": [...]}, ...}
function accounts() {
  return JSON.parse(fs.readFileSync(accountsFile, 'utf8'));
}

// The portal's redirect URIs are on the test server's port, which changes each run: any port on
// the loopback host is allowed for exactly these paths (a test-only provider, 127.0.0.1 only).
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|localhost):\d+(\/oidc\/callback\/|\/accounts\/login\/)$/;

const page = (title, body) => `<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>${title}</title></head><body><main><h1>${title}</h1>${body}</main></body></html>`;
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OIDC_CLIENT_ID,
    client_secret: process.env.OIDC_CLIENT_SECRET,
    client_name: 'Research compute portal',
    redirect_uris: [`http://127.0.0.1:8000/oidc/callback/`],
    post_logout_redirect_uris: [`http://127.0.0.1:8000/accounts/login/`],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [signingKey] },
  cookies: { keys: cookieKeys },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'preferred_username'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.body = page('Sign out of the test provider?', `${form}
          <button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
          <button type="submit" form="op.logoutForm">No, stay signed in</button>`);
      },
      postLogoutSuccessSource: async (ctx) => { ctx.body = page('Signed out', '<p>You are signed out.</p>'); },
    },
  },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  renderError: async (ctx, out) => {
    ctx.type = 'html';
    ctx.body = page('Provider error', `<pre>${esc(JSON.stringify(out))}</pre>`);
  },
  findAccount: async (ctx, sub) => {
    const account = accounts()[sub];
    if (!account) return undefined;
    return {
      accountId: sub,
      claims: async () => ({
        sub,
        email: account.email,
        email_verified: account.email_verified,
        name: account.name,
        given_name: account.given_name,
        family_name: account.family_name,
        preferred_username: account.preferred_username ?? sub,
        groups: account.groups ?? [],
      }),
    };
  },
  ttl: { Session: 3600, Interaction: 600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
});
provider.proxy = false;

const { redirectUriAllowed, postLogoutRedirectUriAllowed } = provider.Client.prototype;
provider.Client.prototype.redirectUriAllowed = function loopbackRedirect(value) {
  return redirectUriAllowed.call(this, value) || (LOOPBACK.test(value) && value.endsWith('/oidc/callback/'));
};
provider.Client.prototype.postLogoutRedirectUriAllowed = function loopbackLogout(value) {
  return postLogoutRedirectUriAllowed.call(this, value) || (LOOPBACK.test(value) && value.endsWith('/accounts/login/'));
};

function loginForm(uid, error = '') {
  return page('Sign in to the test provider', `${error ? `<p role="alert">${esc(error)}</p>` : ''}
    <form method="post" action="/interaction/${esc(uid)}/login" autocomplete="off">
      <label>Account <input name="login" autofocus></label>
      <label>Password <input name="password" type="password"></label>
      <button type="submit">Sign in</button>
    </form>`);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (chunk) => { data += chunk; if (data.length > 10000) req.destroy(); });
    req.on('end', () => resolve(querystring.parse(data)));
    req.on('error', reject);
  });
}

// The first-party portal is trusted: consent is granted for what it asked, without a page.
async function grantConsent(details) {
  const { prompt: { details: missing }, params, session: { accountId } } = details;
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: params.client_id });
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  return grant.save();
}

const html = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(body);
};

async function interactions(req, res) {
  const match = req.url.match(/^\/interaction\/([\w-]+)(\/login)?$/);
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== match[1]) return html(res, 400, page('Wrong interaction', ''));
  if (details.prompt.name === 'consent') {
    const grantId = await grantConsent(details);
    return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }
  if (req.method === 'POST' && match[2]) {
    const { login, password } = await readBody(req);
    const account = accounts()[login];
    const given = Buffer.from(String(password || ''));
    const expected = Buffer.from(String(account?.password ?? crypto.randomUUID()));
    if (!account || given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
      return html(res, 200, loginForm(details.uid, 'Wrong account or password.'));
    }
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  return html(res, 200, loginForm(details.uid));
}

const callback = provider.callback();
http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interactions(req, res).catch((err) => {
      console.error(err);
      if (!res.headersSent) html(res, 400, page('Sign-in failed', `<p>${esc(err.message)}</p>`));
    });
    return;
  }
  callback(req, res);
}).listen(port, '127.0.0.1', () => console.log(`oidc-provider ${issuer} ready`));
