"""Deployment-readiness metrics: strata, temporal stability, geometric coherence
(docs/deployment.md)."""
