"""API tokens: account tokens (what POST auth/token/ and `portal login` get) and personal tokens
(named, made in the browser for scripts): hashed, expiring, revocable, ended by a password
change or a deactivation (docs/security.md, "Tokens")."""
