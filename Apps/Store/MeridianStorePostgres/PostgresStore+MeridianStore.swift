import MeridianStore

/// Every store interface: accounts, social graph, devices and fixes, idempotency (here and in the accounts, social,
/// fixes and ingest files), venues and promotions, administration, operations, shared limits and the live log.
extension PostgresStore: MeridianStore {}
