"""The worker process: config from env, registration, logging, metrics, graceful shutdown."""
