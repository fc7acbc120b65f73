-- Conversations: a question asked with ask(question, conversation => id) is read in the light
-- of the conversation's earlier turns. Written only by pg_ask (as the extension's owner, in
-- the caller's transaction); each role reads its own.
CREATE TABLE conversations (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role        regrole NOT NULL,
    title       text,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at    timestamptz
);
COMMENT ON TABLE conversations IS 'Conversations started with ask.conversation_start(); ask(), ask.sql(), ask.rows() and ask.explain() take the id as conversation => id. Each role sees its own.';
COMMENT ON COLUMN conversations.last_at IS 'When the last turn was asked (ask.conversation_purge() forgets conversations by it)';
COMMENT ON COLUMN conversations.ended_at IS 'Set by ask.conversation_end(): an ended conversation takes no more turns';
CREATE INDEX conversations_role_last_at ON conversations (role, last_at);
ALTER TABLE conversations ENABLE ROW LEVEL SECURITY;
CREATE POLICY conversations_own ON conversations FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
REVOKE ALL ON conversations FROM PUBLIC;
GRANT SELECT ON conversations TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('conversations', '');

CREATE TABLE conversation_turns (
    conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn            int NOT NULL,
    role            regrole NOT NULL,
    asked_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    question        text NOT NULL,
    standalone      text NOT NULL,
    reading         text NOT NULL CHECK (reading IN ('standalone', 'rewritten')),
    sql             text,
    columns         text[],
    row_count       bigint,
    call_id         bigint,
    PRIMARY KEY (conversation_id, turn)
);
COMMENT ON TABLE conversation_turns IS 'The turns of each conversation: the question as asked, as it was answered (standalone), how it was read, the SQL that ran and the shape of its result; call_id is what ask.feedback() takes. Each role sees its own.';
COMMENT ON COLUMN conversation_turns.standalone IS 'The question as answered: a follow-up rewritten into a standalone question, or the question itself';
COMMENT ON COLUMN conversation_turns.reading IS 'standalone (answered as asked) or rewritten (a follow-up of the turn before, rewritten and its SQL shown to generation to edit)';
ALTER TABLE conversation_turns ENABLE ROW LEVEL SECURITY;
CREATE POLICY conversation_turns_own ON conversation_turns FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
REVOKE ALL ON conversation_turns FROM PUBLIC;
GRANT SELECT ON conversation_turns TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('conversation_turns', '');
