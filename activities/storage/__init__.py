"""Layer ``storage``: the tenant's Weka organisation, filesystems, quotas, directories and CSI objects.

The Weka client lives in the kit (:mod:`activities.common.weka_client`).
"""
