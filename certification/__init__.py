"""The certification harness: sinks under test, scenario catalog, process orchestration, histories,
checkers, signed evidence, offline verification and the regression gate.

It imports ``sink`` only for contracts and the failpoint list: evidence is honest only when the
receiver's ground truth, the proxy's log and the checkers are computed by code that does not share
the sink's bugs (its hashing included).
"""

PRODUCER = "restproof-certify"
