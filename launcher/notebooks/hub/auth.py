"""`PortalAuthenticator`: oauthenticator's GenericOAuthenticator against the portal's provider,
keeping the portal username exactly (JupyterHub lowercases names by default, and the portal
names the hub user of a session by its username as it is: "Rosalind" must stay "Rosalind", or
the owner would be a stranger to their own server)."""

from __future__ import annotations

from oauthenticator.generic import GenericOAuthenticator


class PortalAuthenticator(GenericOAuthenticator):
    def normalize_username(self, username):
        return self.username_map.get(username, username)
