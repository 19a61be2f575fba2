"""Institutional sign-in through OpenID Connect (mozilla-django-oidc): discovery, the link between
a portal account and the provider's subject, claims to username and roles (docs/security.md)."""
