"""The offline chat turn (CHAT_TURN): answered from the prompt alone by `turn.chat_turn`.

turn.py          the decision: greet, answer, or ask a person (its rules in its docstring)
candidates.py    the sentences a turn may quote: the evidence chunks' and the supplied context's
message.py       the message's terms (small talk, words about the conversation, a follow-up)
answering.py     which candidates answer: what the question asks for (llm_platform.answer_types), the rarer
                 terms they share, and meaning
composing.py     the answer's text and citations
needs.py         what to ask a person for, and the artifact a request is anchored to
"""
