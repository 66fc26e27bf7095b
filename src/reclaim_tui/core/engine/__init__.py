"""The engine: the reclaim loop's passes, the pure transitions, polling,
batching, operator actions, policies, pacing and the circuit breaker."""
