# frozen_string_literal: true

# The SQL stores' constructors in the Ruby idiom: options as keywords, which are the fields of
# the generated PostgresStoreOptions and SqliteStoreOptions (an unknown keyword is an
# ArgumentError, as for any Ruby method). Nothing else: every check of a value is core's.
#
#   pg = Throttlekit::PostgresStore.new("postgres://app:secret@db/app", table: "limits", timeout_ms: 500)
#   sqlite = Throttlekit::SqliteStore.new("/var/lib/app/limits.db", busy_timeout_ms: 2000)
#   limiter = Throttlekit::Limiter.new(strategy, Throttlekit::LimiterOptions.new(store: Throttlekit::Store::POSTGRES.new(store: pg)))

module Throttlekit
  class PostgresStore
    alias_method :uniffi_initialize, :initialize
    private :uniffi_initialize

    # Connects to `url`, blocking (the GVL released): `config_invalid` for a bad option, a
    # missing table with `migrate: false` or a table of another shape; `store_unavailable` for
    # an unreachable server or a refused login.
    def initialize(url, **options)
      uniffi_initialize(url, PostgresStoreOptions.new(**options))
    end

    # Creates (or brings up to date) the table and functions, then disconnects: the deploy step
    # for stores opened with `migrate: false`.
    def self.migrate(url, **options)
      Throttlekit.postgres_migrate_blocking(url, PostgresStoreOptions.new(**options))
    end
  end

  class SqliteStore
    alias_method :uniffi_initialize, :initialize
    private :uniffi_initialize

    # Opens (creating if missing) the file at `path`: `config_invalid` for a bad option, a file
    # that cannot be opened or is not a database, a missing table with `migrate: false` or a
    # table of another shape.
    def initialize(path, **options)
      uniffi_initialize(path.to_s, SqliteStoreOptions.new(**options))
    end
  end
end
