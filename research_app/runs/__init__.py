"""Research runs (SPEC §4): bind the session's context, explore the question as a tree, write a cited report.

    start_run ─► bind (context_app parses; file events) ─► root node (full context)
        node: queries → search → findings → sufficiency ─┬─ sufficient / limit → leaf
                                                          └─ decompose → context split → children (in parallel)
    all nodes done ─► report (full context again) ─► completed

Every step is a Celery task that loads ids and calls one function here; each is
safe to run twice (a status claim guards it). Every step is a stored RunEvent.
"""
