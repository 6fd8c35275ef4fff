"""The offline chat turn (CHAT_TURN): what the `offline` provider answers to a chat turn."""
