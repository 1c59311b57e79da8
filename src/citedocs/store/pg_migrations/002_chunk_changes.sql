-- Every chunk row added or removed, in commit order: see the SQLite migration 004. PostgreSQL writers run
-- concurrently, so a statement that adds or removes chunks first takes a transaction-level advisory lock
-- (held to commit): sequence numbers are then handed out in commit order, and a reader that has seen seq n
-- has seen every change numbered below it.
CREATE TABLE chunk_changes (
    seq   BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    chunk BIGINT NOT NULL,
    added SMALLINT NOT NULL
);

CREATE FUNCTION chunks_changes_lock() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1667855468, 0);  -- "citl": not LOCK_NAMESPACE, whose keys are source ids
    RETURN NULL;
END $$;
CREATE TRIGGER chunks_changes_lock BEFORE INSERT OR DELETE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION chunks_changes_lock();

CREATE FUNCTION chunks_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chunk_changes (chunk, added) VALUES (NEW.id, 1);
        RETURN NEW;
    END IF;
    INSERT INTO chunk_changes (chunk, added) VALUES (OLD.id, 0);
    RETURN OLD;
END $$;
CREATE TRIGGER chunks_log_change AFTER INSERT OR DELETE ON chunks
    FOR EACH ROW EXECUTE FUNCTION chunks_log_change();
