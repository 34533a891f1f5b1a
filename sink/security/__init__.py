"""Wire security of the reference sink: TLS and network policies by reference, the deny-only
revocation list, and the one function that builds a binding's transport from them
(see docs/wire-security.md)."""
