"""Layer ``storage``: the tenant's Weka organisation, filesystems, quotas, directories and CSI objects."""
