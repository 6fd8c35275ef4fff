"""Offline research tasks: what the `offline` provider answers to the six tasks of a research run.

A documented product mode (it runs when no API key is configured), not a test
double. No model, no network, no randomness, no clock: the same prompt always
gives the same JSON, and that JSON passes the task's schema (prompts/schemas/).
Every handler reads the prompt it is given (`read_task`, `evidence_chunks`) and
answers from that alone. Each research task names its handler here
(`offline_handler` in model_tasks.py), which registers it with the offline
provider (llm_platform.offline).

The common tool is token overlap. A text's content terms are its lower-cased
words without English stop words (and, for questions, without question words),
stemmed with the Snowball English stemmer, so "losses" meets "loss" and
"reduced" meets "reduce" (llm_platform.terms).

    queries.py        NODE_QUERIES
    findings.py       NODE_FINDINGS
    sufficiency.py    NODE_SUFFICIENCY
    decompose.py      NODE_DECOMPOSE (a question's clauses, subject and verbs: questions.py)
    context_split.py  CONTEXT_SPLIT
    report.py         REPORT
    inputs.py         reading a task's INPUT_JSON
    statements.py     what a statement is (never a heading or a label)
"""
