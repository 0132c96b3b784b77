"""Deployment-readiness metrics: strata, temporal stability, geometric coherence
(README.md, "Deployment readiness")."""
