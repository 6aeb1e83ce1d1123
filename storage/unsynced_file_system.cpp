#include "storage/unsynced_file_system.hpp"

#include <rocksdb/file_system.h>

#include <memory>

namespace tessera {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

class UnsyncedWritableFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;
  IOStatus Sync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Fsync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus RangeSync(std::uint64_t, std::uint64_t, const IOOptions&, IODebugContext*) override {
    return IOStatus::OK();
  }
  bool IsSyncThreadSafe() const override { return true; }
};

class UnsyncedDirectory : public rocksdb::FSDirectoryWrapper {
 public:
  using FSDirectoryWrapper::FSDirectoryWrapper;
  IOStatus Fsync(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus FsyncWithDirOptions(const IOOptions&, IODebugContext*, const rocksdb::DirFsyncOptions&) override {
    return IOStatus::OK();
  }
};

class UnsyncedFileSystem : public rocksdb::FileSystemWrapper {
 public:
  UnsyncedFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "TesseraUnsyncedFileSystem"; }

  IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                           std::unique_ptr<rocksdb::FSWritableFile>* result, IODebugContext* dbg) override {
    return wrap(target()->NewWritableFile(name, options, result, dbg), result);
  }
  IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                              std::unique_ptr<rocksdb::FSWritableFile>* result,
                              IODebugContext* dbg) override {
    return wrap(target()->ReopenWritableFile(name, options, result, dbg), result);
  }
  IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                             const rocksdb::FileOptions& options,
                             std::unique_ptr<rocksdb::FSWritableFile>* result, IODebugContext* dbg) override {
    return wrap(target()->ReuseWritableFile(name, old_name, options, result, dbg), result);
  }
  IOStatus NewDirectory(const std::string& name, const IOOptions& options,
                        std::unique_ptr<rocksdb::FSDirectory>* result, IODebugContext* dbg) override {
    auto status = target()->NewDirectory(name, options, result, dbg);
    if (status.ok() && *result) *result = std::make_unique<UnsyncedDirectory>(std::move(*result));
    return status;
  }

 private:
  static IOStatus wrap(IOStatus status, std::unique_ptr<rocksdb::FSWritableFile>* result) {
    if (status.ok() && *result) *result = std::make_unique<UnsyncedWritableFile>(std::move(*result));
    return status;
  }
};

}  // namespace

rocksdb::Env* unsynced_env() {
  static const std::unique_ptr<rocksdb::Env> env =
      rocksdb::NewCompositeEnv(std::make_shared<UnsyncedFileSystem>());
  return env.get();
}

}  // namespace tessera
