"""Deployment-readiness metrics (SPEC §6): strata, temporal stability, geometric coherence."""
