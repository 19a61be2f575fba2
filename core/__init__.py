"""The ground floor: what every app of the portal uses and no app owns.

It sits below `allocations` (portal -> launcher -> benchmarks -> allocations -> core) and
imports only Django, DRF and the standard library, never an app (import-linter contracts
`floors` and `core-imports-no-app` in .importlinter). It is no Django app: it has no models,
templates or migrations.

- `errors`: the domain's one vocabulary of refusals (`Invalid`, `Forbidden`, `NotFound`,
  `Conflict`), with `api` (the API's exception handler) and `refusals` (the pages' mapping)
  as its two mappers, and `admin` (admin actions that call a service per object).
- `strict`: DRF fields that take only what the schema says (strings, whole numbers).
- `figures` (the rounding rule), `bounds` (the integer ranges the database stores),
  `versions` (the pages' cache versions), `tasks` (`enqueue` a task by name after commit).
"""
