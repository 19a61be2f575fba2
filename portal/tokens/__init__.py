"""Personal API tokens: named, expiring, revocable keys a person makes in the browser for
scripts and the `portal` command line (docs/security.md)."""
