-- restproof operation journal, schema version 3: the distributed rate limiter
-- (sink.journal.rate_policy). One token bucket row per limit and scope (its level in 1/60000 of a
-- token at refilled_at, server clock), and the active-request claims: each a lease that expires, so
-- a killed holder cannot keep its slot forever. request_slot_scopes is the lock row that serialises
-- the claims of one scope. Forward-only: never edit once released.
CREATE TABLE rate_buckets (
    bucket       text PRIMARY KEY,
    units        bigint NOT NULL CHECK (units >= 0),
    refilled_at  timestamptz NOT NULL
);
CREATE TABLE request_slot_scopes (
    scope        text PRIMARY KEY
);
CREATE TABLE request_slots (
    scope        text NOT NULL REFERENCES request_slot_scopes (scope),
    holder       text NOT NULL,
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (scope, holder)
);
