#include "extension/npy.h"

#include <cstdio>
#include <cstring>

#include "runtime/core/log.h"

namespace tern {
namespace {

struct DescrName {
  const char* descr;
  ScalarType dtype;
};
const DescrName kDescrs[] = {
    {"<f4", ScalarType::Float32}, {"<f8", ScalarType::Float64}, {"<i8", ScalarType::Int64},
    {"<i4", ScalarType::Int32},   {"<i2", ScalarType::Int16},   {"|i1", ScalarType::Int8},
    {"|u1", ScalarType::UInt8},   {"|b1", ScalarType::Bool},    {"<f2", ScalarType::Float16},
};

// The value after 'key': in the header dict, or nullptr.
const char* find_key(const std::string& header, const char* key) {
  size_t p = header.find(key);
  if (p == std::string::npos) return nullptr;
  p = header.find(':', p);
  if (p == std::string::npos) return nullptr;
  p = header.find_first_not_of(" ", p + 1);
  return p == std::string::npos ? nullptr : header.c_str() + p;
}

Error parse_header(const char* path, const std::string& h, NpyArray* out) {
  const char* descr = find_key(h, "'descr'");
  const char* fortran = find_key(h, "'fortran_order'");
  const char* shape = find_key(h, "'shape'");
  if (!descr || !fortran || !shape) {
    TERN_LOG_ERROR("'%s': malformed .npy header: %s", path, h.c_str());
    return Error::InvalidArgument;
  }
  if (strncmp(fortran, "False", 5) != 0) {
    TERN_LOG_ERROR("'%s': Fortran-order arrays are not supported (save with np.ascontiguousarray)", path);
    return Error::InvalidArgument;
  }
  bool found = false;
  for (const DescrName& d : kDescrs) {
    if (strncmp(descr + 1, d.descr, 3) == 0) {
      out->dtype = d.dtype;
      found = true;
    }
  }
  if (!found) {
    TERN_LOG_ERROR("'%s': dtype %.6s is not supported", path, descr);
    return Error::InvalidArgument;
  }
  out->sizes.clear();
  const char* p = shape + 1;  // after '('
  while (*p && *p != ')') {
    char* end;
    long long v = strtoll(p, &end, 10);
    if (end == p) { ++p; continue; }
    out->sizes.push_back(v);
    p = end;
  }
  return Error::Ok;
}

}  // namespace

Tensor NpyArray::tensor() {
  Tensor t;
  t.data = data.data();
  t.dtype = dtype;
  t.dim = static_cast<int32_t>(sizes.size());
  t.numel = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    t.sizes[i] = sizes[i];
    t.numel *= sizes[i];
  }
  return t;
}

Error read_npy(const char* path, NpyArray* out) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    TERN_LOG_ERROR("cannot open '%s'", path);
    return Error::AccessFailed;
  }
  unsigned char pre[12];
  Error e = Error::Ok;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    TERN_LOG_ERROR("'%s' is not a .npy file", path);
    e = Error::InvalidArgument;
  }
  size_t hlen = 0;
  if (e == Error::Ok) {
    hlen = pre[8] | (pre[9] << 8);
    if (pre[6] >= 2) {  // versions 2 and 3 have a 4-byte header length
      if (fread(pre + 10, 1, 2, f) != 2) e = Error::InvalidArgument;
      hlen = pre[8] | (pre[9] << 8) | (pre[10] << 16) | (size_t(pre[11]) << 24);
    }
  }
  std::string header(hlen, '\0');
  if (e == Error::Ok && fread(&header[0], 1, hlen, f) != hlen) e = Error::InvalidArgument;
  if (e == Error::Ok) e = parse_header(path, header, out);
  if (e == Error::Ok) {
    size_t n = scalar_type_size(out->dtype);
    for (int64_t s : out->sizes) n *= static_cast<size_t>(s);
    out->data.resize(n);
    if (fread(out->data.data(), 1, n, f) != n) {
      TERN_LOG_ERROR("'%s': the file ends before its %zu data bytes", path, n);
      e = Error::InvalidArgument;
    }
  }
  fclose(f);
  return e;
}

Error write_npy(const char* path, const Tensor& t) {
  const char* descr = nullptr;
  for (const DescrName& d : kDescrs) {
    if (d.dtype == t.dtype) descr = d.descr;
  }
  if (descr == nullptr) {
    TERN_LOG_ERROR("write_npy('%s'): dtype %s has no .npy name", path, scalar_type_name(t.dtype));
    return Error::InvalidArgument;
  }
  std::string shape;
  for (int i = 0; i < t.dim; ++i) shape += std::to_string(t.sizes[i]) + (t.dim == 1 ? "," : i + 1 < t.dim ? ", " : "");
  std::string h = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');  // data starts 64-byte aligned, as numpy writes
  h += '\n';
  FILE* f = fopen(path, "wb");
  if (!f) {
    TERN_LOG_ERROR("cannot create '%s'", path);
    return Error::AccessFailed;
  }
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                           static_cast<unsigned char>(h.size() & 0xFF), static_cast<unsigned char>(h.size() >> 8)};
  bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(h.data(), 1, h.size(), f) == h.size() &&
            fwrite(t.data, 1, t.nbytes(), f) == t.nbytes();
  ok = fclose(f) == 0 && ok;
  if (!ok) {
    TERN_LOG_ERROR("cannot write '%s'", path);
    return Error::AccessFailed;
  }
  return Error::Ok;
}

}  // namespace tern
