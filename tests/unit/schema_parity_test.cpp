// The schema is written twice, once for each database (schema_sqlite.cpp, schema_postgres.cpp),
// and the store's SQL reads both. Both are migrated to the last version here, read back from each
// database's own catalogue, and compared: the same tables, columns (kind and nullability),
// primary keys, indexes and foreign keys, but for the differences each side's comments give.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store_test_fixture.h"
#include "tests/support/postgres_cluster.h"

#include "server/storage/migrations.h"
#include "server/storage/postgres_database.h"
#include "server/storage/sqlite_database.h"

namespace dormant::server::storage {
namespace {

struct Table {
  std::map<std::string, std::string> columns;  // name → "integer not null", "text", …
  std::string primary_key;                     // its columns, in order
  std::set<std::string> indexes;               // "name: unique (a, b) where …"
  std::set<std::string> foreign_keys;          // "(a, b) → table (c, d) on delete cascade"
};
using Schema = std::map<std::string, Table>;

// Each database names a column's kind its own way: what the store can rely on is the class.
std::string kind_of(std::string type) {
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type == "integer" || type == "bigint") return "integer";
  if (type == "text") return "text";
  if (type == "bytea" || type == "blob") return "bytes";
  if (type == "real" || type == "double precision") return "real";
  return "unknown type " + type;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The rows of `sql` (with `table` as ?1 when given), each of its `columns` as text.
std::vector<std::vector<std::string>> rows(Database& db, int columns, const std::string& sql,
                                           const std::string& table = "") {
  std::vector<std::vector<std::string>> out;
  auto statement = db.prepare(sql);
  EXPECT_TRUE(statement.ok()) << sql << ": " << statement.error().message();
  if (!statement.ok()) return out;
  if (!table.empty()) statement->bind(1, table);
  for (;;) {
    auto row = statement->step();
    EXPECT_TRUE(row.ok()) << sql << ": " << row.error().message();
    if (!row.ok() || !*row) return out;
    std::vector<std::string> values;
    for (int column = 0; column < columns; ++column) {
      values.emplace_back(statement->is_null(column) ? "" : statement->text(column));
    }
    out.push_back(std::move(values));
  }
}

Schema sqlite_schema(Database& db) {
  Schema schema;
  for (const auto& table : rows(db, 1,
                                "SELECT name FROM sqlite_master WHERE type = 'table' "
                                "AND name NOT LIKE 'sqlite_%'")) {
    Table& described = schema[table[0]];
    std::map<int, std::string> key;
    for (const auto& column :
         rows(db, 4, "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)", table[0])) {
      std::string pk = column[3];
      // INTEGER PRIMARY KEY is the rowid: never null, whatever it says.
      bool not_null = column[2] == "1" || pk != "0";
      described.columns[column[0]] = kind_of(column[1]) + (not_null ? " not null" : "");
      if (pk != "0") key[std::stoi(pk)] = column[0];
    }
    for (const auto& [position, column] : key) {
      described.primary_key += (described.primary_key.empty() ? "" : ", ") + column;
    }
    for (const auto& index : rows(db, 4,
                                  "SELECT l.name, l.\"unique\", l.origin, m.sql FROM "
                                  "pragma_index_list(?1) AS l LEFT JOIN sqlite_master AS m "
                                  "ON m.type = 'index' AND m.name = l.name",
                                  table[0])) {
      if (index[2] == "pk") continue;
      std::string columns;
      for (const auto& column :
           rows(db, 1, "SELECT name FROM pragma_index_info(?1) ORDER BY seqno", index[0])) {
        columns += (columns.empty() ? "" : ", ") + column[0];
      }
      // A UNIQUE constraint's index is named by each database its own way.
      std::string name = index[2] == "c" ? index[0] + ": " : "";
      std::string sql = lower(index[3]);
      size_t where = sql.find(" where ");
      described.indexes.insert(name + (index[1] == "1" ? "unique " : "") + "(" + columns + ")" +
                               (where == std::string::npos ? "" : sql.substr(where)));
    }
    std::map<std::string, std::vector<std::string>> keys;  // by id: from, table, to, on delete
    for (const auto& part :
         rows(db, 5,
              "SELECT id, \"from\", \"table\", \"to\", on_delete FROM pragma_foreign_key_list(?1) "
              "ORDER BY id, seq",
              table[0])) {
      auto& key_parts = keys[part[0]];
      if (key_parts.empty()) key_parts = {"", part[2], "", lower(part[4])};
      key_parts[0] += (key_parts[0].empty() ? "" : ", ") + part[1];
      key_parts[2] += (key_parts[2].empty() ? "" : ", ") + part[3];
    }
    for (const auto& [id, parts] : keys) {
      described.foreign_keys.insert("(" + parts[0] + ") → " + parts[1] + " (" + parts[2] +
                                    ") on delete " + parts[3]);
    }
  }
  return schema;
}

Schema postgres_schema(Database& db) {
  // The columns of an index or a constraint, in order, as "a, b".
  auto columns_of = [](const std::string& relation, const std::string& numbers) {
    return "(SELECT string_agg(a.attname, ', ' ORDER BY k.n) FROM unnest(" + numbers +
           ") WITH ORDINALITY AS k (attnum, n) JOIN pg_attribute AS a ON a.attrelid = " + relation +
           " AND a.attnum = k.attnum)";
  };
  Schema schema;
  for (const auto& table :
       rows(db, 1,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE'")) {
    Table& described = schema[table[0]];
    for (const auto& column :
         rows(db, 3,
              "SELECT column_name, data_type, is_nullable FROM information_schema.columns "
              "WHERE table_schema = current_schema() AND table_name = ?1",
              table[0])) {
      described.columns[column[0]] = kind_of(column[1]) + (column[2] == "NO" ? " not null" : "");
    }
    for (const auto& index : rows(db, 6,
                                  "SELECT c.relname, i.indisunique, i.indisprimary, "
                                  "EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = "
                                  "i.indexrelid), pg_get_expr(i.indpred, i.indrelid), " +
                                      columns_of("i.indrelid", "i.indkey::int2[]") +
                                      " FROM pg_index AS i JOIN pg_class AS c ON c.oid = "
                                      "i.indexrelid WHERE i.indrelid = ?1::regclass",
                                  table[0])) {
      if (index[2] == "t") {
        described.primary_key = index[5];
        continue;
      }
      std::string name = index[3] == "t" ? "" : index[0] + ": ";
      // pg_get_expr writes "(replaced_by IS NULL)"; SQLite keeps the statement's own text.
      std::string where = lower(index[4]);
      if (where.size() > 2 && where.front() == '(' && where.back() == ')') {
        where = where.substr(1, where.size() - 2);
      }
      described.indexes.insert(name + (index[1] == "t" ? "unique " : "") + "(" + index[5] + ")" +
                               (where.empty() ? "" : " where " + where));
    }
    for (const auto& key :
         rows(db, 4,
              "SELECT " + columns_of("c.conrelid", "c.conkey") + ", c.confrelid::regclass::text, " +
                  columns_of("c.confrelid", "c.confkey") +
                  ", c.confdeltype FROM pg_constraint AS c WHERE c.contype = "
                  "'f' AND c.conrelid = ?1::regclass",
              table[0])) {
      static const std::map<std::string, std::string> kOnDelete = {{"a", "no action"},
                                                                   {"r", "restrict"},
                                                                   {"c", "cascade"},
                                                                   {"n", "set null"},
                                                                   {"d", "set default"}};
      described.foreign_keys.insert("(" + key[0] + ") → " + key[1] + " (" + key[2] +
                                    ") on delete " + kOnDelete.at(key[3]));
    }
  }
  return schema;
}

class SchemaParityTest : public StorageDirTest {};

TEST_F(SchemaParityTest, SqliteAndPostgresqlHoldTheSameSchemaButForTheDifferencesTheyDeclare) {
  if (std::string why = testing::PostgresCluster::unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  auto cluster = testing::PostgresCluster::start();
  ASSERT_TRUE(cluster.ok()) << cluster.error().message();
  auto url = (*cluster)->create_database();
  ASSERT_TRUE(url.ok()) << url.error().message();
  auto postgres = PostgresDatabase::connect(*url);
  ASSERT_TRUE(postgres.ok()) << postgres.error().message();
  auto sqlite = SqliteDatabase::open(dir_ / "parity.db");
  ASSERT_TRUE(sqlite.ok()) << sqlite.error().message();
  auto postgres_version = migrate(**postgres);
  auto sqlite_version = migrate(**sqlite);
  ASSERT_TRUE(postgres_version.ok()) << postgres_version.error().message();
  ASSERT_TRUE(sqlite_version.ok()) << sqlite_version.error().message();
  ASSERT_EQ(*postgres_version, *sqlite_version);

  Schema on_sqlite = sqlite_schema(**sqlite);
  Schema on_postgres = postgres_schema(**postgres);
  // The catalogues are read whole: a partial unique index, a cascading foreign key.
  EXPECT_TRUE(on_sqlite["commands"].indexes.contains(
      "commands_one_current: unique (hostname, service_name) where replaced_by is null"));
  EXPECT_TRUE(on_sqlite["host_processes"].foreign_keys.contains(
      "(hostname, service_name, position) → host_containers (hostname, service_name, position) "
      "on delete cascade"));

  // What each side says it does differently (schema_postgres.cpp's first comment): its version
  // in a table of its own (SQLite's is PRAGMA user_version), profile bodies in a table (files
  // beside SQLite, so that a profile's file_name is never NULL there), and identity columns for
  // the order SQLite's rowid keeps by itself.
  EXPECT_EQ(on_postgres.erase("dormant_schema"), 1u);
  EXPECT_EQ(on_postgres.erase("profile_bodies"), 1u);
  std::string& file_name = on_postgres["profiles"].columns["file_name"];
  EXPECT_EQ(file_name, "text");
  file_name += " not null";
  for (auto& [name, table] : on_postgres) {
    if (table.columns.erase("rowid") == 1) {
      EXPECT_EQ(on_sqlite[name].columns.count("rowid"), 0u) << name;
    }
  }

  std::set<std::string> tables;
  for (const auto& [name, table] : on_sqlite) tables.insert(name);
  for (const auto& [name, table] : on_postgres) tables.insert(name);
  for (const std::string& name : tables) {
    SCOPED_TRACE("table " + name);
    ASSERT_TRUE(on_sqlite.contains(name)) << "on PostgreSQL only";
    ASSERT_TRUE(on_postgres.contains(name)) << "on SQLite only";
    const Table& lite = on_sqlite[name];
    const Table& pg = on_postgres[name];
    EXPECT_EQ(lite.columns, pg.columns);
    EXPECT_EQ(lite.primary_key, pg.primary_key);
    EXPECT_EQ(lite.indexes, pg.indexes);
    EXPECT_EQ(lite.foreign_keys, pg.foreign_keys);
  }
}

}  // namespace
}  // namespace dormant::server::storage
