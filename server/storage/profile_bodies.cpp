#include "server/storage/profile_bodies.h"

#include "common/gzip.h"

namespace dormant::server::storage {

Result<PreparedBody> FileBodies::prepare(std::string_view collapsed) {
  auto written = files_.write(collapsed);
  if (!written) return std::move(written).take_error();
  return PreparedBody{written->file_name, {}, written->compressed_size};
}

void FileBodies::abandon(const PreparedBody& body) {
  if (body.file_name) files_.remove(*body.file_name);
}

Result<std::string> FileBodies::read(const ProfileRow& row) {
  if (!row.file_name) {
    return Error::parse("profile " + std::to_string(row.profile.gpid) + " names no file");
  }
  return files_.read(*row.file_name, row.profile.raw_size);
}

void FileBodies::forget(const std::vector<std::string>& file_names) {
  for (const std::string& name : file_names) files_.remove(name);
}

Result<PreparedBody> TableBodies::prepare(std::string_view collapsed) {
  auto compressed = gzip_compress(collapsed);
  if (!compressed) return std::move(compressed).take_error();
  auto size = static_cast<int64_t>(compressed->size());
  return PreparedBody{std::nullopt, std::move(*compressed), size};
}

Result<void> TableBodies::attach(Database& db, int64_t gpid, const PreparedBody& body) {
  auto insert = db.prepare("INSERT INTO profile_bodies (gpid, gzip) VALUES (?1, ?2)");
  if (!insert) return std::move(insert).take_error();
  return insert->bind(1, gpid).bind_blob(2, body.gzip).run();
}

Result<std::string> TableBodies::read(const ProfileRow& row) {
  std::string doing = "reading the body of profile " + std::to_string(row.profile.gpid);
  std::string compressed;
  {
    auto db = pool_.lease();
    if (!db) return std::move(db).take_error().with_context(doing);
    auto select = (*db)->prepare("SELECT gzip FROM profile_bodies WHERE gpid = ?1");
    if (!select) return std::move(select).take_error();
    auto found = select->bind(1, row.profile.gpid).step();
    if (!found) return std::move(found).take_error();
    if (!*found) return Error(ErrorKind::kNotFound, doing + ": it has none");
    compressed = select->blob(0);
  }
  auto text = gzip_decompress(compressed, static_cast<size_t>(row.profile.raw_size));
  if (!text) return std::move(text).take_error().with_context(doing);
  return text;
}

}  // namespace dormant::server::storage
