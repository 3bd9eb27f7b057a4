"""The former name of kafka_testbed, kept so that ``python -m kafka_sim`` goes on working; import kafka_testbed."""
