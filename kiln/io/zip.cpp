// Zip reading and writing over zlib (raw deflate streams and crc32). See zip.h.
#include "kiln/io/zip.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <limits>

namespace kiln::io {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr uint32_t k32 = 0xFFFFFFFFu;
constexpr uint16_t kZip64Extra = 0x0001;
constexpr uint16_t kDosDate1980 = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, the DOS epoch

std::atomic<uint64_t> zip64_threshold{k32};

uint32_t crc_update(uint32_t crc, const char* p, size_t n) {
  return static_cast<uint32_t>(crc32_z(crc, reinterpret_cast<const Bytef*>(p), n));
}

// Bounds-checked little-endian fields of a byte buffer read from the archive.
struct Cursor {
  const std::string& buf;
  size_t pos;
  const std::string& where;
  template <typename T>
  T get() {
    if (pos > buf.size() || buf.size() - pos < sizeof(T)) {
      corrupt("The zip central directory of ", where, " is cut off.");
    }
    T v = read_le<T>(buf.data() + pos);
    pos += sizeof(T);
    return v;
  }
  std::string bytes(size_t n) {
    if (pos > buf.size() || buf.size() - pos < n)
      corrupt("The zip central directory of ", where, " is cut off.");
    std::string s = buf.substr(pos, n);
    pos += n;
    return s;
  }
};

}  // namespace

std::vector<ZipEntry> read_zip_directory(Reader& in) {
  const std::string where = in.label();
  const size_t size = in.size();
  auto not_zip = [&](const std::string& why) -> void {
    corrupt(where, " is not a valid zip (.npz) archive: ", why, ".");
  };
  // Without an end record it is no zip at all: a ValueError, as MLX raises for what
  // zipfile.is_zipfile rejects.
  auto no_end_record = [&](const std::string& why) -> void {
    throw std::invalid_argument(msg("[load] ", where, " is not a zip (.npz) archive: ", why, "."));
  };
  // The end-of-central-directory record: 22 bytes and a comment of up to 64 KiB, at the end.
  if (size < 22) no_end_record("it is too short");
  size_t tail_len = std::min<size_t>(size, 22 + 0xFFFF);
  std::string tail(tail_len, '\0');
  in.read(tail.data(), tail_len, size - tail_len);
  size_t at = std::string::npos;
  for (size_t p = tail_len - 22 + 1; p-- > 0;) {
    if (read_le<uint32_t>(tail.data() + p) == kEndSig &&
        p + 22 + read_le<uint16_t>(tail.data() + p + 20) <= tail_len) {
      at = p;
      break;
    }
  }
  if (at == std::string::npos) no_end_record("it has no end-of-central-directory record");
  const char* e = tail.data() + at;
  const size_t end_pos = size - tail_len + at;
  uint64_t entries = read_le<uint16_t>(e + 10);
  uint64_t cd_size = read_le<uint32_t>(e + 12);
  uint64_t cd_offset = read_le<uint32_t>(e + 16);
  if (read_le<uint16_t>(e + 4) != 0 || read_le<uint16_t>(e + 6) != 0)
    not_zip("multi-disk archives are not supported");
  size_t cd_end = end_pos;
  // Zip64: a locator right before the record points at the zip64 end record.
  if (end_pos >= 20 &&
      read_value<uint32_t>(in, end_pos - 20, "the zip64 locator") == kEnd64LocatorSig) {
    uint64_t rec = read_value<uint64_t>(in, end_pos - 12, "the zip64 locator");
    if (rec > end_pos - 20 || end_pos - 20 - rec < 56)
      not_zip("the zip64 end record is out of place");
    std::string r(56, '\0');
    in.read(r.data(), 56, rec);
    if (read_le<uint32_t>(r.data()) != kEnd64Sig)
      not_zip("the zip64 end record has a bad signature");
    entries = read_le<uint64_t>(r.data() + 32);
    cd_size = read_le<uint64_t>(r.data() + 40);
    cd_offset = read_le<uint64_t>(r.data() + 48);
    cd_end = rec;
  }
  if (cd_offset > cd_end || cd_size != cd_end - cd_offset) {
    not_zip(msg("the central directory (", cd_size, " bytes at offset ", cd_offset,
                ") does not end where the end record starts (", cd_end, ")"));
  }
  if (entries > cd_size / 46)
    not_zip(msg(entries, " members cannot fit a ", cd_size, "-byte directory"));
  std::string cd(cd_size, '\0');
  if (cd_size) in.read(cd.data(), cd_size, cd_offset);

  std::vector<ZipEntry> out;
  Cursor c{cd, 0, where};
  for (uint64_t i = 0; i < entries; ++i) {
    if (c.get<uint32_t>() != kCentralSig)
      not_zip(msg("member ", i, " has a bad directory signature"));
    c.pos += 4;  // versions made by / needed
    uint16_t flags = c.get<uint16_t>();
    ZipEntry z;
    z.method = c.get<uint16_t>();
    c.pos += 4;  // time, date
    z.crc = c.get<uint32_t>();
    z.compressed_size = c.get<uint32_t>();
    z.size = c.get<uint32_t>();
    uint16_t name_len = c.get<uint16_t>(), extra_len = c.get<uint16_t>(),
             comment_len = c.get<uint16_t>();
    uint16_t disk = c.get<uint16_t>();
    c.pos += 6;  // internal, external attributes
    uint64_t local = c.get<uint32_t>();
    z.name = c.bytes(name_len);
    std::string extra = c.bytes(extra_len);
    c.bytes(comment_len);
    // Zip64 sizes and offset: only the fields saturated above, in this order.
    for (size_t p = 0; p + 4 <= extra.size();) {
      uint16_t id = read_le<uint16_t>(extra.data() + p),
               len = read_le<uint16_t>(extra.data() + p + 2);
      if (p + 4 + len > extra.size()) not_zip("a directory extra field is cut off");
      if (id == kZip64Extra) {
        std::string field = extra.substr(p + 4, len);
        Cursor f{field, 0, where};
        if (z.size == k32) z.size = f.get<uint64_t>();
        if (z.compressed_size == k32) z.compressed_size = f.get<uint64_t>();
        if (local == k32) local = f.get<uint64_t>();
      }
      p += 4 + len;
    }
    const std::string name = "'" + printable(z.name) + "'";
    if (flags & 1)
      corrupt("Member ", name, " of ", where, " is encrypted, which kiln does not read.");
    if (disk != 0) not_zip("multi-disk archives are not supported");
    if (z.method != 0 && z.method != 8) {
      corrupt("Member ", name, " of ", where, " uses compression method ", z.method,
              "; kiln reads stored (0) and deflated (8) members.");
    }
    // Deflate expands at most ~1032:1; a larger claim is a damaged size, not data.
    if (z.method == 8 && z.size / 1032 > z.compressed_size + 1) {
      corrupt("Member ", name, " of ", where, " claims ", z.size, " bytes from ", z.compressed_size,
              " deflated bytes, more than deflate can produce.");
    }
    if (z.method == 0 && z.compressed_size != z.size) {
      corrupt("Stored member ", name, " of ", where, " has sizes ", z.compressed_size, " and ",
              z.size, ".");
    }
    // The local header repeats the name; the data follows it and its extra field.
    if (local > size || size - local < 30)
      corrupt("Member ", name, " of ", where, " starts outside the file.");
    char lh[30];
    in.read(lh, 30, local);
    if (read_le<uint32_t>(lh) != kLocalSig)
      corrupt("Member ", name, " of ", where, " has a bad local header signature.");
    uint64_t lname = read_le<uint16_t>(lh + 26), lextra = read_le<uint16_t>(lh + 28);
    if (size - local - 30 < lname + lextra)
      corrupt("Member ", name, " of ", where, " has its header cut off.");
    std::string local_name(lname, '\0');
    if (lname) in.read(local_name.data(), lname, local + 30);
    if (local_name != z.name) {
      corrupt("Member ", name, " of ", where, " is named '", printable(local_name),
              "' in its local header.");
    }
    z.data_offset = local + 30 + lname + lextra;
    if (z.compressed_size > size - z.data_offset) {
      corrupt("Member ", name, " of ", where, " has ", z.compressed_size, " bytes at offset ",
              z.data_offset, " but the file has ", size, ".");
    }
    out.push_back(std::move(z));
  }
  if (c.pos != cd.size()) {
    not_zip(msg("its central directory holds ", cd.size() - c.pos,
                " bytes more than the ", entries, " members the end record counts"));
  }
  return out;
}

// ---------------------------------------------------------------- ZipEntryReader
struct ZipEntryReader::Inflater {
  z_stream zs{};
  std::string in_buf;
  bool ended = false;
  Inflater() {
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
      throw std::runtime_error("[load] zlib inflateInit2 failed.");
  }
  ~Inflater() { inflateEnd(&zs); }
};

ZipEntryReader::ZipEntryReader(std::shared_ptr<Reader> archive, ZipEntry entry)
    : archive_(std::move(archive)), entry_(std::move(entry)) {
  restart();
}

ZipEntryReader::~ZipEntryReader() = default;

std::string ZipEntryReader::label() const {
  return "member '" + printable(entry_.name) + "' of " + archive_->label();
}

void ZipEntryReader::restart() {
  pos_ = 0;
  in_pos_ = 0;
  crc_ = 0;
  inflater_.reset();
  if (entry_.method == 8) inflater_ = std::make_unique<Inflater>();
}

void ZipEntryReader::feed() {
  z_stream& zs = inflater_->zs;
  if (zs.avail_in > 0 || in_pos_ >= entry_.compressed_size) return;
  size_t chunk = std::min<uint64_t>(entry_.compressed_size - in_pos_, size_t(1) << 20);
  inflater_->in_buf.resize(chunk);
  archive_->read(inflater_->in_buf.data(), chunk, entry_.data_offset + in_pos_);
  in_pos_ += chunk;
  zs.next_in = reinterpret_cast<Bytef*>(inflater_->in_buf.data());
  zs.avail_in = static_cast<uInt>(chunk);
}

void ZipEntryReader::produce(char* data, size_t n) {
  if (n > entry_.size - pos_) corrupt("Read past the end of ", label(), ".");
  if (!inflater_) {
    archive_->read(data, n, entry_.data_offset + pos_);
  } else {
    z_stream& zs = inflater_->zs;
    size_t done = 0;
    while (done < n) {
      feed();
      size_t want = std::min<size_t>(n - done, size_t(1) << 30);
      zs.next_out = reinterpret_cast<Bytef*>(data + done);
      zs.avail_out = static_cast<uInt>(want);
      int rc = inflate(&zs, Z_NO_FLUSH);
      done += want - zs.avail_out;
      if (rc == Z_STREAM_END) {
        inflater_->ended = true;
        if (done < n) {
          corrupt("The deflated data of ", label(), " ends after ", pos_ + done, " of ",
                  entry_.size, " bytes.");
        }
      } else if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_pos_ >= entry_.compressed_size) {
        corrupt("The deflated data of ", label(), " is cut off after ", pos_ + done, " of ",
                entry_.size, " bytes.");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        corrupt("The deflated data of ", label(),
                " is corrupt (zlib: ", zs.msg ? zs.msg : "error " + std::to_string(rc), ").");
      }
    }
  }
  crc_ = crc_update(crc_, data, n);
  pos_ += n;
}

void ZipEntryReader::read(char* data, size_t n, size_t offset) {
  if (offset < pos_) restart();
  std::string skip;
  while (pos_ < offset) {
    size_t k = std::min<size_t>(offset - pos_, size_t(1) << 20);
    skip.resize(k);
    produce(skip.data(), k);
  }
  produce(data, n);
}

void ZipEntryReader::finish() {
  std::string rest;
  while (pos_ < entry_.size) {
    size_t k = std::min<size_t>(entry_.size - pos_, size_t(1) << 20);
    rest.resize(k);
    produce(rest.data(), k);
  }
  if (inflater_ && !inflater_->ended) {
    // The stream must end exactly here: inflate on with one byte of room, which must stay
    // unused until zlib reports the end.
    z_stream& zs = inflater_->zs;
    char extra;
    while (true) {
      feed();
      zs.next_out = reinterpret_cast<Bytef*>(&extra);
      zs.avail_out = 1;
      int rc = inflate(&zs, Z_NO_FLUSH);
      if (zs.avail_out == 0) {
        corrupt("The deflated data of ", label(), " holds more than the ", entry_.size,
                " bytes the directory says.");
      }
      if (rc == Z_STREAM_END) break;
      if (rc == Z_OK && (zs.avail_in > 0 || in_pos_ < entry_.compressed_size)) continue;
      corrupt("The deflated data of ", label(), " does not end after its ", entry_.size, " bytes.");
    }
    inflater_->ended = true;
  }
  if (crc_ != entry_.crc) {
    corrupt("CRC-32 mismatch in ", label(), ": the data gives ", crc_, ", the directory says ",
            entry_.crc, ". The file is corrupt.");
  }
}

// ---------------------------------------------------------------- ZipWriter
uint64_t set_zip64_threshold(uint64_t bytes) {
  return zip64_threshold.exchange(bytes);
}

void ZipWriter::add(const std::string& name, const std::vector<std::string_view>& parts,
                    bool deflate) {
  Central m{name, static_cast<uint16_t>(deflate ? 8 : 0), 0, 0, 0, out_.tell()};
  for (auto p : parts) {
    m.crc = crc_update(m.crc, p.data(), p.size());
    m.size += p.size();
  }
  std::string compressed;
  if (deflate) {
    z_stream zs{};
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK) {
      throw std::runtime_error("[" + op_ + "] zlib deflateInit2 failed.");
    }
    compressed.resize(deflateBound(&zs, m.size) + 64);
    size_t produced = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      size_t off = 0;
      do {
        size_t k = std::min<size_t>(parts[i].size() - off, size_t(1) << 30);
        bool last = i + 1 == parts.size() && off + k == parts[i].size();
        zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(parts[i].data() + off));
        zs.avail_in = static_cast<uInt>(k);
        int rc;
        do {
          if (compressed.size() - produced < 64) compressed.resize(compressed.size() * 2 + 64);
          size_t room = std::min<size_t>(compressed.size() - produced, size_t(1) << 30);
          zs.next_out = reinterpret_cast<Bytef*>(compressed.data() + produced);
          zs.avail_out = static_cast<uInt>(room);
          rc = ::deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
          produced += room - zs.avail_out;
        } while (last ? rc != Z_STREAM_END : zs.avail_in > 0);
        off += k;
      } while (off < parts[i].size());
    }
    if (parts.empty() || m.size == 0) {  // no input: finish an empty stream
      int rc;
      do {
        if (compressed.size() - produced < 64) compressed.resize(compressed.size() * 2 + 64);
        zs.next_in = nullptr;
        zs.avail_in = 0;
        size_t room = compressed.size() - produced;
        zs.next_out = reinterpret_cast<Bytef*>(compressed.data() + produced);
        zs.avail_out = static_cast<uInt>(room);
        rc = ::deflate(&zs, Z_FINISH);
        produced += room - zs.avail_out;
      } while (rc != Z_STREAM_END);
    }
    deflateEnd(&zs);
    compressed.resize(produced);
    m.compressed_size = produced;
  } else {
    m.compressed_size = m.size;
  }
  const uint64_t limit = zip64_threshold.load();
  bool zip64 = m.size >= limit || m.compressed_size >= limit;
  bool utf8 = std::any_of(name.begin(), name.end(),
                          [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  std::string h;
  put_le<uint32_t>(h, kLocalSig);
  put_le<uint16_t>(h, zip64 ? 45 : 20);
  put_le<uint16_t>(h, utf8 ? 1 << 11 : 0);
  put_le<uint16_t>(h, m.method);
  put_le<uint16_t>(h, 0);
  put_le<uint16_t>(h, kDosDate1980);
  put_le<uint32_t>(h, m.crc);
  put_le<uint32_t>(h, zip64 ? k32 : static_cast<uint32_t>(m.compressed_size));
  put_le<uint32_t>(h, zip64 ? k32 : static_cast<uint32_t>(m.size));
  put_le<uint16_t>(h, static_cast<uint16_t>(name.size()));
  put_le<uint16_t>(h, zip64 ? 20 : 0);
  h += name;
  if (zip64) {
    put_le<uint16_t>(h, kZip64Extra);
    put_le<uint16_t>(h, 16);
    put_le<uint64_t>(h, m.size);
    put_le<uint64_t>(h, m.compressed_size);
  }
  out_.write(h.data(), h.size());
  if (deflate) {
    out_.write(compressed.data(), compressed.size());
  } else {
    for (auto p : parts) out_.write(p.data(), p.size());
  }
  members_.push_back(std::move(m));
}

void ZipWriter::finish() {
  const uint64_t cd_offset = out_.tell();
  const uint64_t limit = zip64_threshold.load();
  for (const auto& m : members_) {
    std::string extra;
    if (m.size >= limit) put_le<uint64_t>(extra, m.size);
    if (m.compressed_size >= limit) put_le<uint64_t>(extra, m.compressed_size);
    if (m.offset >= limit) put_le<uint64_t>(extra, m.offset);
    if (!extra.empty()) {
      std::string head;
      put_le<uint16_t>(head, kZip64Extra);
      put_le<uint16_t>(head, static_cast<uint16_t>(extra.size()));
      extra = head + extra;
    }
    bool zip64 = !extra.empty();
    bool utf8 = std::any_of(m.name.begin(), m.name.end(),
                            [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    std::string h;
    put_le<uint32_t>(h, kCentralSig);
    put_le<uint16_t>(h, (3 << 8) | 45);  // made by: Unix, zip 4.5
    put_le<uint16_t>(h, zip64 ? 45 : 20);
    put_le<uint16_t>(h, utf8 ? 1 << 11 : 0);
    put_le<uint16_t>(h, m.method);
    put_le<uint16_t>(h, 0);
    put_le<uint16_t>(h, kDosDate1980);
    put_le<uint32_t>(h, m.crc);
    put_le<uint32_t>(h,
                     m.compressed_size >= limit ? k32 : static_cast<uint32_t>(m.compressed_size));
    put_le<uint32_t>(h, m.size >= limit ? k32 : static_cast<uint32_t>(m.size));
    put_le<uint16_t>(h, static_cast<uint16_t>(m.name.size()));
    put_le<uint16_t>(h, static_cast<uint16_t>(extra.size()));
    put_le<uint16_t>(h, 0);               // comment
    put_le<uint16_t>(h, 0);               // disk
    put_le<uint16_t>(h, 0);               // internal attributes
    put_le<uint32_t>(h, 0100644u << 16);  // a regular file, rw-r--r--
    put_le<uint32_t>(h, m.offset >= limit ? k32 : static_cast<uint32_t>(m.offset));
    h += m.name;
    h += extra;
    out_.write(h.data(), h.size());
  }
  const uint64_t cd_size = out_.tell() - cd_offset;
  const uint64_t n = members_.size();
  std::string e;
  const bool end64 = n >= 0xFFFF || cd_size >= limit || cd_offset >= limit;
  if (end64) {
    const uint64_t rec = out_.tell();
    put_le<uint32_t>(e, kEnd64Sig);
    put_le<uint64_t>(e, 44);
    put_le<uint16_t>(e, (3 << 8) | 45);
    put_le<uint16_t>(e, 45);
    put_le<uint32_t>(e, 0);
    put_le<uint32_t>(e, 0);
    put_le<uint64_t>(e, n);
    put_le<uint64_t>(e, n);
    put_le<uint64_t>(e, cd_size);
    put_le<uint64_t>(e, cd_offset);
    put_le<uint32_t>(e, kEnd64LocatorSig);
    put_le<uint32_t>(e, 0);
    put_le<uint64_t>(e, rec);
    put_le<uint32_t>(e, 1);
  }
  put_le<uint32_t>(e, kEndSig);
  put_le<uint16_t>(e, 0);
  put_le<uint16_t>(e, 0);
  put_le<uint16_t>(e, end64 ? 0xFFFF : static_cast<uint16_t>(n));
  put_le<uint16_t>(e, end64 ? 0xFFFF : static_cast<uint16_t>(n));
  put_le<uint32_t>(e, end64 ? k32 : static_cast<uint32_t>(cd_size));
  put_le<uint32_t>(e, end64 ? k32 : static_cast<uint32_t>(cd_offset));
  put_le<uint16_t>(e, 0);
  out_.write(e.data(), e.size());
}

}  // namespace kiln::io
