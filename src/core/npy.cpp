#include "npy.hpp"

#include <cctype>
#include <cstring>
#include <limits>
#include <map>

namespace distmm {
namespace {

// A recursive-descent reader for the small subset of Python literals .npy headers use: a dict
// of string keys to strings, booleans, and tuples of non-negative integers.
class Literal {
 public:
  Literal(const char* p, std::size_t n) : p_(p), end_(p + n) {}

  std::map<std::string, std::string> dict(NpyHeader& h) {
    std::map<std::string, std::string> out;
    skip();
    expect('{');
    for (;;) {
      skip();
      if (peek() == '}') {
        ++p_;
        break;
      }
      std::string key = string();
      skip();
      expect(':');
      skip();
      if (key == "shape") {
        h.shape = tuple();
        out[key] = "()";
      } else if (peek() == '\'' || peek() == '"') {
        out[key] = string();
      } else {
        out[key] = word();
      }
      skip();
      if (peek() == ',') {
        ++p_;
        continue;
      }
      skip();
      expect('}');
      break;
    }
    return out;
  }

 private:
  char peek() const {
    if (p_ >= end_) throw NpyError("header ends inside its dictionary");
    return *p_;
  }
  void skip() {
    while (p_ < end_ && std::isspace(static_cast<unsigned char>(*p_))) ++p_;
  }
  void expect(char c) {
    if (peek() != c) throw NpyError(std::string("header expects '") + c + "' at offset " + where());
    ++p_;
  }
  std::string where() const { return std::to_string(p_ - start_); }
  std::string string() {
    char q = peek();
    if (q != '\'' && q != '"') throw NpyError("header expects a quoted key at offset " + where());
    ++p_;
    std::string s;
    while (peek() != q) {
      if (s.size() > 64) throw NpyError("header string too long");
      s += *p_++;
    }
    ++p_;
    return s;
  }
  std::string word() {
    std::string s;
    while (p_ < end_ && std::isalpha(static_cast<unsigned char>(*p_))) s += *p_++;
    if (s.empty()) throw NpyError("header has an unexpected value at offset " + where());
    return s;
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> v;
    expect('(');
    for (;;) {
      skip();
      if (peek() == ')') {
        ++p_;
        break;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        throw NpyError("header shape holds a non-integer at offset " + where());
      std::int64_t x = 0;
      while (p_ < end_ && std::isdigit(static_cast<unsigned char>(*p_))) {
        if (x > (std::numeric_limits<std::int64_t>::max() - 9) / 10) throw NpyError("header shape overflows");
        x = x * 10 + (*p_++ - '0');
      }
      if (p_ < end_ && (*p_ == 'L' || *p_ == 'l')) ++p_;  // Python 2 longs
      v.push_back(x);
      if (v.size() > 32) throw NpyError("header shape has too many dimensions");
      skip();
      if (peek() == ',') ++p_;
      else if (peek() != ')') throw NpyError("header shape is malformed at offset " + where());
    }
    return v;
  }

  const char* p_;
  const char* end_;
  const char* start_ = p_;
};

}  // namespace

NpyHeader parse_npy_header(const std::uint8_t* b, std::size_t n) {
  static const std::uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (n < 10 || std::memcmp(b, magic, 6) != 0) throw NpyError("not a .npy file (no \\x93NUMPY magic)");
  NpyHeader h;
  h.major = b[6];
  h.minor = b[7];
  if ((h.major != 1 && h.major != 2 && h.major != 3) || h.minor != 0)
    throw NpyError("is .npy format version " + std::to_string(h.major) + "." + std::to_string(h.minor) +
                   ": distmm reads versions 1.0, 2.0 and 3.0 (numpy.save writes these)");
  std::size_t len = 0, start = 0;
  if (h.major == 1) {
    len = b[8] | (std::size_t(b[9]) << 8);
    start = 10;
  } else {
    if (n < 12) throw NpyError("header truncated");
    len = b[8] | (std::size_t(b[9]) << 8) | (std::size_t(b[10]) << 16) | (std::size_t(b[11]) << 24);
    start = 12;
  }
  if (len > kNpyHeaderMax)
    throw NpyError("has a header of " + std::to_string(len) + " bytes, over the " +
                   std::to_string(kNpyHeaderMax >> 20) + " MiB distmm reads (numpy.save writes a few hundred): "
                   "save the array again with numpy.save");
  if (start + len > n) throw NpyError("header truncated: the file ends inside its header");
  Literal lit(reinterpret_cast<const char*>(b + start), len);
  auto d = lit.dict(h);
  if (!d.count("descr")) throw NpyError("header lacks 'descr'");
  if (!d.count("fortran_order")) throw NpyError("header lacks 'fortran_order'");
  if (!d.count("shape")) throw NpyError("header lacks 'shape'");
  h.descr = d["descr"];
  if (d["fortran_order"] == "True") h.fortran_order = true;
  else if (d["fortran_order"] == "False") h.fortran_order = false;
  else throw NpyError("header 'fortran_order' is neither True nor False");
  h.data_offset = start + len;
  return h;
}

std::string make_npy_header(Dtype dt, std::int64_t rows, std::int64_t cols, bool fortran_order) {
  std::string dict = std::string("{'descr': '") + info(dt).numpy_descr +
                     "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                     ", 'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // Version 1.0 when the header fits 16 bits; data aligned to 64 bytes; newline-terminated.
  std::size_t pre = dict.size() + 1 + 10 <= 65535 ? 10 : 12;
  std::size_t total = ((pre + dict.size() + 1 + 63) / 64) * 64;
  dict.append(total - pre - dict.size() - 1, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  std::size_t len = dict.size();
  if (pre == 10) {
    h += '\x01';
    h += '\x00';
    h += static_cast<char>(len & 0xff);
    h += static_cast<char>((len >> 8) & 0xff);
  } else {
    h += '\x02';
    h += '\x00';
    for (int s = 0; s < 32; s += 8) h += static_cast<char>((len >> s) & 0xff);
  }
  return h + dict;
}

Dtype npy_dtype(const std::string& descr) {
  if (auto d = parse_dtype(descr, true)) return *d;
  // '|' and '=' mean native order, little-endian on every machine distmm builds for.
  if (descr.size() > 1 && (descr[0] == '=' || descr[0] == '|'))
    if (auto d = parse_dtype("<" + descr.substr(1), true)) return *d;
  std::string known;
  for (Dtype d : kAllDtypes) known += (known.empty() ? "" : ", ") + std::string(info(d).numpy_descr);
  if (descr.size() > 1 && descr[0] == '>' && parse_dtype("<" + descr.substr(1), true))
    throw NpyError("holds big-endian '" + descr + "': convert with numpy's .astype('<" +
                   descr.substr(1) + "')");
  throw NpyError("holds dtype '" + descr + "': distmm reads " + known +
                 " (float32, float64, complex64, complex128); convert with numpy's .astype(np.float64)");
}

}  // namespace distmm
