"""Forward-only SQL migrations of the PostgreSQL journal (a package so that wheels ship the .sql files)."""
