"""Weka REST API v2 stand-in: login tokens, organizations, filesystems with capacity, directory quotas."""
