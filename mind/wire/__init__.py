"""Conversions between the Mind's domain views and the contract messages, shared by the Mind
and Management servicers: protos meet domain code here and at the servicers, nowhere below."""
