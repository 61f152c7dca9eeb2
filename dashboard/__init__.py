"""The reviewer dashboard: server-rendered pages over the same services and selectors as
the API, with htmx polling for the live parts (check progress, re-validation, queue)."""
