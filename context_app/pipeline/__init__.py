"""Parsing, by stage: extraction in the worker, Task A per file, Task B per set (SPEC §2.3–2.5).

Every step is safe to run twice and writes only if the state it started from is
still current (the file's text hash, the set's aggregate inputs): a stale job's
result is dropped, never shown. From the bottom up, each module importing only
those above it in this list:

    jobs             the Celery jobs, queued by task name (context_app.tasks runs them)
    aggregate_state  does the aggregate still match the files? (inside every mutation)
    recovery         jobs no live worker holds go back to the queue (job leases: workspaces/leases.py)
    dispatch         Parse now / auto-parse: claim stale files, queue Task A, then Task B
    aggregate        Task B: a tree of cached calls over the files' digests
    digest           Task A for one file, from the cache or a model call
    extract          a file's bytes → text, spans and a version, in a child process
    failures         a job that raised ends its file or aggregate in `error`
"""
