# Chat, context requests and supplies arrive with the chat issue (SPEC §5).
