"""The provider's logout page (/o/logout/, OpenID Connect RP-initiated logout): the toolkit's
view, on the portal's own page, with every malformed hint a 400 page that says so.

The toolkit's view looks the client up with `.get()` (an unknown `client_id` was a 500) and
reads an `id_token_hint`'s payload as JSON before checking it (a hint of the right shape with a
payload of the wrong one was a 500); here both are its own "invalid request" answer."""

from __future__ import annotations

from oauth2_provider.exceptions import InvalidIDTokenError, InvalidOIDCClientError
from oauth2_provider.models import get_application_model
from oauth2_provider.views import RPInitiatedLogoutView


class LogoutView(RPInitiatedLogoutView):
    """Anonymous: nothing to end, on to the portal. Signed in: a page asks "sign out?"
    (always, as the specification recommends); yes ends the portal's session (and the
    hub's tokens) and returns to the client's registered `post_logout_redirect_uri`, or the
    portal's home."""

    template_name = "provider/logout_confirm.html"

    def validate_logout_request_user(self, id_token_hint, client_id):
        try:
            return super().validate_logout_request_user(id_token_hint, client_id)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise InvalidIDTokenError() from None

    def get_request_application(self, id_token, client_id):
        if client_id:
            application = get_application_model().objects.filter(client_id=client_id).first()
            if application is None:
                raise InvalidOIDCClientError()
            return application
        return super().get_request_application(id_token, client_id)
