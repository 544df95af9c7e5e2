"""Layer ``records``: what the house keeps and tells about a tenant: run records, the handover sheet, term notices."""
