-- The sandbox a pod runs its agents in (`landlock v7, pid+mount namespaces`, or `off`), as the
-- pod reported it when it registered: shown in `yoi pod list` and on the pods page.
ALTER TABLE pods ADD COLUMN sandbox TEXT;
