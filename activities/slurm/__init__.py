"""Layer ``slurm``: the tenant's Slurm account, QoS, users and partition (sacctmgr and scontrol)."""
