"""Approvals: the Authorizer (deterministic policy, isolated Reviewer) and the persisted
Approval Broker, with the audit of every verdict. Wired into the Mind by `mind.approvals.wiring`.
"""
