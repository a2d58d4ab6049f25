#include "viewer/text_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace proton::viewer {

namespace {

constexpr const char* kReset = "\033[0m";
constexpr const char* kRed = "\033[31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kGreen = "\033[32m";
constexpr const char* kCyan = "\033[36m";
constexpr const char* kMagenta = "\033[35m";
constexpr const char* kDim = "\033[2m";
constexpr const char* kBold = "\033[1m";

struct Line {
  int32_t node;
  std::string prefix;  // tree connectors
};

// Display width of UTF-8 text: counts code points, which is right for the box-drawing
// characters and the ellipsis this view prints.
size_t display_width(const std::string& text) {
  size_t width = 0;
  for (char c : text)
    width += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return width;
}

void pad_left(std::string& out, const std::string& text, size_t width) {
  size_t shown = display_width(text);
  if (shown < width) out.append(width - shown, ' ');
  out += text;
}

class TreePrinter {
 public:
  TreePrinter(const Profile& profile, const std::vector<Column>& columns,
              const RenderOptions& options)
      : profile_(profile), columns_(columns), options_(options) {}

  std::string print() {
    collect();
    format_cells();
    std::string out;
    emit_header(out);
    for (const Line& line : lines_)
      emit_line(out, line.node, line.prefix);
    if (options_.print_sorted) emit_sorted(out);
    return out;
  }

 private:
  bool shown(int32_t node) const {
    return options_.visible == nullptr || (*options_.visible)[static_cast<size_t>(node)];
  }

  // Pre-order walk with an explicit stack; the prefix of a child extends its parent's.
  void collect() {
    struct Item {
      int32_t node;
      int depth;
      std::string lead;  // connectors inherited from ancestors
      bool last;
    };
    std::vector<Item> stack{{0, 0, "", true}};
    while (!stack.empty()) {
      Item item = std::move(stack.back());
      stack.pop_back();
      std::string prefix = item.depth == 0 ? "" : item.lead + (item.last ? "└─ " : "├─ ");
      lines_.push_back({item.node, std::move(prefix)});
      if (item.depth >= options_.max_depth) continue;
      std::vector<int32_t> kids;
      for (int32_t child : profile_.nodes[static_cast<size_t>(item.node)].children) {
        if (shown(child)) kids.push_back(child);
      }
      std::string lead = item.depth == 0 ? "" : item.lead + (item.last ? "   " : "│  ");
      for (size_t i = kids.size(); i-- > 0;) {
        stack.push_back({kids[i], item.depth + 1, lead, i + 1 == kids.size()});
      }
    }
  }

  void format_cells() {
    widths_.assign(columns_.size(), 0);
    cells_.assign(profile_.nodes.size() * columns_.size(), std::string());
    for (size_t c = 0; c < columns_.size(); ++c)
      widths_[c] = display_width(columns_[c].header);
    for (const Line& line : lines_) {
      for (size_t c = 0; c < columns_.size(); ++c) {
        std::string& cell = cell_at(line.node, c);
        cell =
            format_value(columns_[c].values[static_cast<size_t>(line.node)], columns_[c].integral);
        widths_[c] = std::max(widths_[c], cell.size());
      }
    }
  }

  std::string& cell_at(int32_t node, size_t column) {
    return cells_[static_cast<size_t>(node) * columns_.size() + column];
  }

  void emit_header(std::string& out) {
    if (options_.color) out += kDim;
    for (size_t c = 0; c < columns_.size(); ++c) {
      pad_left(out, (options_.diff ? "Δ " : "") + columns_[c].header,
               widths_[c] + (options_.diff ? 2 : 0));
      out += "  ";
    }
    out += "frame";
    if (options_.color) out += kReset;
    out += '\n';
  }

  const char* heat(int32_t node) const {
    if (columns_.empty()) return nullptr;
    double v = columns_[0].values[static_cast<size_t>(node)];
    if (is_absent(v)) return nullptr;
    if (options_.diff) return v > 0 ? kRed : (v < 0 ? kGreen : nullptr);
    double total = columns_[0].values[0];
    if (!columns_[0].additive || !(total > 0)) return nullptr;
    double share = v / total;
    if (share >= 0.5) return kRed;
    if (share >= 0.2) return kYellow;
    if (share >= 0.05) return kGreen;
    return nullptr;
  }

  void emit_values(std::string& out, int32_t node) {
    for (size_t c = 0; c < columns_.size(); ++c) {
      const char* color = options_.color && c == 0 ? heat(node) : nullptr;
      if (color) out += color;
      pad_left(out, cell_at(node, c), widths_[c] + (options_.diff ? 2 : 0));
      if (color) out += kReset;
      out += "  ";
    }
  }

  void emit_name(std::string& out, int32_t node) {
    const Node& n = profile_.nodes[static_cast<size_t>(node)];
    bool kernel = options_.color && n.is_kernel();
    if (kernel) out += kCyan;
    if (options_.color && node == 0) out += kBold;
    out += display_name(n.name, options_.names);
    if (kernel || (options_.color && node == 0)) out += kReset;
    if (options_.presence != nullptr) {
      uint8_t side = (*options_.presence)[static_cast<size_t>(node)];
      if (side != kBoth) {
        if (options_.color) out += kMagenta;
        out += " [only in ";
        out += terminal_safe(side == kOnlyMain ? options_.main_label : options_.other_label);
        out += ']';
        if (options_.color) out += kReset;
      }
    }
  }

  void emit_line(std::string& out, int32_t node, const std::string& prefix) {
    emit_values(out, node);
    if (options_.color && !prefix.empty()) out += kDim;
    out += prefix;
    if (options_.color && !prefix.empty()) out += kReset;
    emit_name(out, node);
    out += '\n';
  }

  // Every shown frame but the root, by the first metric, largest first (NaN, then absent last).
  void emit_sorted(std::string& out) {
    if (columns_.empty()) return;
    std::vector<int32_t> order;
    for (const Line& line : lines_) {
      if (line.node != 0) order.push_back(line.node);
    }
    const auto& key = columns_[0].values;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      double x = key[static_cast<size_t>(a)];
      double y = key[static_cast<size_t>(b)];
      // Numbers largest first, then NaN, then absent: NaN must not reach `>` (no strict order).
      int rx = is_absent(x) ? 2 : (std::isnan(x) ? 1 : 0);
      int ry = is_absent(y) ? 2 : (std::isnan(y) ? 1 : 0);
      if (rx != 0 || ry != 0) return rx < ry;
      return x > y;
    });
    out += "\nSorted frames by " + columns_[0].header + ":\n";
    for (int32_t node : order)
      emit_line(out, node, "");
  }

  const Profile& profile_;
  const std::vector<Column>& columns_;
  const RenderOptions& options_;
  std::vector<Line> lines_;
  std::vector<std::string> cells_;
  std::vector<size_t> widths_;
};

}  // namespace

std::string format_value(double value, bool integral) {
  if (is_absent(value)) return "-";
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  if (std::fabs(value) >= 1e15) {
    std::snprintf(buffer, sizeof buffer, "%.4e", value);
  } else if (integral) {
    std::snprintf(buffer, sizeof buffer, "%.0f", value);
  } else if (value != 0 && std::fabs(value) < 1e-3) {
    std::snprintf(buffer, sizeof buffer, "%.3e", value);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3f", value);
  }
  return buffer;
}

void render_tree(std::ostream& out, const Profile& profile, const std::vector<Column>& columns,
                 const RenderOptions& options) {
  if (profile.nodes.empty()) return;
  out << TreePrinter(profile, columns, options).print();
}

}  // namespace proton::viewer
