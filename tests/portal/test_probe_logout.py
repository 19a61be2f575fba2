"""The probe's finding about signing out (issue 34): `GET /o/logout/` was a 500 (RP-initiated
logout was not enabled): a page now (finding 4), and the hub's logout with its registered
return is honoured.

The other findings: test_probe_input_limits.py (1, 2, 3, 5) and test_probe_launches.py (6, 7).
"""

from __future__ import annotations

import pytest
from oauth2_provider.models import get_application_model

pytestmark = [pytest.mark.django_db]


# 4. The provider's logout is a page -------------------------------------------------------


@pytest.mark.parametrize("debug", [False, True])
def test_the_provider_logout_is_a_page_never_a_500(client, researcher, settings, debug):
    settings.DEBUG = debug
    anonymous = client.get("/o/logout/")
    assert anonymous.status_code == 302 and anonymous["Location"] == "http://testserver/"

    client.force_login(researcher)
    confirm = client.get("/o/logout/")
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "Sign out of the portal" in page and 'name="allow"' in page
    assert client.get("/o/logout/", {"client_id": "nobody"}).status_code == 400
    assert client.get("/o/logout/", {"id_token_hint": "not.a.token"}).status_code == 400
    assert (
        client.get("/o/logout/", {"post_logout_redirect_uri": "https://evil.example/"}).status_code
        == 400
    )
    assert client.get("/").status_code == 200  # still signed in after the refusals

    done = client.post("/o/logout/", {"allow": "Sign out"})
    assert done.status_code == 302
    assert client.get("/").status_code == 302  # signed out


def test_the_hubs_logout_with_its_registered_return_is_honoured(client, researcher):
    document = client.get("/o/.well-known/openid-configuration").json()
    assert document["end_session_endpoint"] == "http://testserver/o/logout/"
    Application = get_application_model()
    Application.objects.create(
        client_id="hub",
        name="JupyterHub",
        client_type="confidential",
        authorization_grant_type="authorization-code",
        redirect_uris="http://hub.test/cb",
        post_logout_redirect_uris="http://hub.test/hub/logout",
        algorithm="RS256",
    )
    client.force_login(researcher)
    response = client.post(
        "/o/logout/",
        {
            "allow": "Sign out",
            "client_id": "hub",
            "post_logout_redirect_uri": "http://hub.test/hub/logout",
        },
    )
    assert response.status_code == 302 and response["Location"] == "http://hub.test/hub/logout"
