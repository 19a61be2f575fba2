"""JupyterHub's configuration for the portal's notebooks (docs/notebooks-hub.md):

    jupyterhub -f launcher/notebooks/hub/jupyterhub_config.py

Everything comes from the environment (docs/configuration.md), with `make run`'s defaults:
  JUPYTERHUB_URL            public URL (browsers, OAuth callback)   http://127.0.0.1:8081
  JUPYTERHUB_BIND_URL       where the proxy listens                 JUPYTERHUB_URL
  JUPYTERHUB_HUB_BIND_URL   the hub's own API, behind the proxy     port of JUPYTERHUB_URL + 1
  JUPYTERHUB_PROXY_API_URL  configurable-http-proxy's REST API      port of JUPYTERHUB_URL + 2
  JUPYTERHUB_STATE_DIR      sqlite database, cookie secret, pids    ${PORTAL_VAR_DIR:-<repo>/var}/hub
  JUPYTERHUB_PROXY_CMD      configurable-http-proxy                 <repo>/.hub/bin/...
  PORTAL_BASE_URL           the portal, as browsers reach it        http://127.0.0.1:8000
  PORTAL_INTERNAL_URL       the portal, as the hub reaches it       PORTAL_BASE_URL
  JUPYTERHUB_CLIENT_ID / JUPYTERHUB_CLIENT_SECRET   the hub's client at the portal's provider
  JUPYTERHUB_API_TOKEN      the token of the `portal` service (the portal's key to the hub)
  JUPYTERHUB_IDLE_TIMEOUT   seconds idle before jupyterhub-idle-culler stops a server  1800
  JUPYTERHUB_START_TIMEOUT  seconds a server may take to answer                        120
"""

import os
import sys
from pathlib import Path
from urllib.parse import urlparse, urlunparse

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))  # so `launcher.notebooks.hub.*` imports (no Django is loaded)

from launcher.notebooks.hub.spawner import hear_sigint  # noqa: E402 (after the path)

c = get_config()  # noqa: F821 (JupyterHub's config loader provides it)

hear_sigint()  # its servers and the idle culler stop at once when started under make run's `&`


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


def required(name: str) -> str:
    value = env(name)
    if not value:
        sys.exit(f"jupyterhub_config.py: {name} must be set (docs/notebooks-hub.md)")
    return value


def with_port(url: str, offset: int) -> str:
    parts = urlparse(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return urlunparse(parts._replace(netloc=f"{parts.hostname}:{port + offset}", path=""))


hub_url = env("JUPYTERHUB_URL", "http://127.0.0.1:8081").rstrip("/")
portal_url = env("PORTAL_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
portal_internal = env("PORTAL_INTERNAL_URL", portal_url).rstrip("/")
state_dir = Path(
    env("JUPYTERHUB_STATE_DIR", str(Path(env("PORTAL_VAR_DIR", str(REPO / "var"))) / "hub"))
)
state_dir.mkdir(parents=True, exist_ok=True)

# Where it listens and keeps its state.
c.JupyterHub.bind_url = env("JUPYTERHUB_BIND_URL", hub_url)
c.JupyterHub.hub_bind_url = env("JUPYTERHUB_HUB_BIND_URL", with_port(hub_url, 1))
c.ConfigurableHTTPProxy.api_url = env("JUPYTERHUB_PROXY_API_URL", with_port(hub_url, 2))
proxy_cmd = env("JUPYTERHUB_PROXY_CMD", str(REPO / ".hub" / "bin" / "configurable-http-proxy"))
if "/" in proxy_cmd and not Path(proxy_cmd).exists():
    sys.exit(
        f"jupyterhub_config.py: {proxy_cmd} is missing: run `make install` "
        "(or bash scripts/install-hub-proxy.sh)"
    )
c.ConfigurableHTTPProxy.command = [proxy_cmd]
c.ConfigurableHTTPProxy.pid_file = str(state_dir / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{state_dir / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state_dir / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state_dir / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # a stopped hub stops its local servers (their records end)

# One sign-on: the portal is the OpenID Connect provider (portal/provider/, /o/).
c.JupyterHub.authenticator_class = "launcher.notebooks.hub.auth.PortalAuthenticator"
c.GenericOAuthenticator.client_id = required("JUPYTERHUB_CLIENT_ID")
c.GenericOAuthenticator.client_secret = required("JUPYTERHUB_CLIENT_SECRET")
c.GenericOAuthenticator.oauth_callback_url = f"{hub_url}/hub/oauth_callback"
c.GenericOAuthenticator.authorize_url = f"{portal_url}/o/authorize/"
c.GenericOAuthenticator.token_url = f"{portal_internal}/o/token/"
c.GenericOAuthenticator.userdata_url = f"{portal_internal}/o/userinfo/"
c.GenericOAuthenticator.scope = ["openid", "profile", "email"]
c.GenericOAuthenticator.username_claim = "preferred_username"
c.GenericOAuthenticator.login_service = "the portal"
c.GenericOAuthenticator.allow_all = True  # the portal decides who gets a server
c.GenericOAuthenticator.auto_login = True
c.Authenticator.admin_users = set()

# Only the portal starts and stops servers (the ledger is never bypassed): a user may open,
# read and keep tokens for their own servers, nothing more.
c.JupyterHub.load_roles = [
    {
        "name": "user",
        "description": "A portal user: opens their own servers only",
        "scopes": [
            "access:servers!user",
            "read:users!user",
            "read:servers!user",
            "users:activity!user",
            "tokens!user",
        ],
    },
    {
        "name": "portal",
        "description": "The portal: starts, stops and reads every server",
        "scopes": [
            "admin:users",
            "admin:servers",
            "admin:server_state",
            "list:users",
            "read:users",
            "servers",
            "users:activity",
        ],
        "services": ["portal"],
    },
    {
        "name": "idle-culler",
        "description": "Stops servers idle past JUPYTERHUB_IDLE_TIMEOUT",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    },
]
c.JupyterHub.services = [
    {"name": "portal", "api_token": required("JUPYTERHUB_API_TOKEN")},
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={int(env('JUPYTERHUB_IDLE_TIMEOUT', '1800'))}",
        ],
    },
]

# Servers: named (nb-<session id>), started by PortalSpawner on the session's backend.
c.JupyterHub.allow_named_servers = True
c.JupyterHub.named_server_limit_per_user = 0
c.JupyterHub.default_url = "/hub/home"
# The home and "not running" pages say that sessions are opened from the portal (their own
# start buttons would only answer 403: users hold no `servers` scope).
c.JupyterHub.template_paths = [str(HERE / "templates")]
c.JupyterHub.template_vars = {"portal_url": portal_url}
c.JupyterHub.spawner_class = "launcher.notebooks.hub.spawner.PortalSpawner"
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = int(env("JUPYTERHUB_START_TIMEOUT", "120"))
c.Spawner.http_timeout = int(env("JUPYTERHUB_START_TIMEOUT", "120"))
c.Spawner.env_keep = ["PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "VIRTUAL_ENV"]
