-- Every chunk row added or removed, in commit order (SQLite has one writer at a time). An in-memory keyword
-- index (search/keyword_index.py) in any process catches up with any process's writes by reading only the
-- rows after the last `seq` it applied. Writers keep the newest CHANGE_LOG_KEEP rows (store/base.py); meta
-- 'chunk_changes_pruned' says up to which seq rows are gone, so a reader that far behind rebuilds instead.
CREATE TABLE chunk_changes (
    seq   INTEGER PRIMARY KEY,
    chunk INTEGER NOT NULL,
    added INTEGER NOT NULL
);

CREATE TRIGGER chunks_log_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_changes (chunk, added) VALUES (new.id, 1);
END;

CREATE TRIGGER chunks_log_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunk_changes (chunk, added) VALUES (old.id, 0);
END;
