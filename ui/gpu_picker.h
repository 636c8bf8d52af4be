#pragma once
// Where a run trains, in the run setup: the selected server's GPUs with their live free memory
// (the agent's GET /v1/gpus through the core/net client, asked again every few seconds while the
// picker is visible, never on the GUI thread) and the choice between a GPU and the CPU.
//
// The choice is "a free GPU" (the agent's scheduler assigns one and sets CUDA_VISIBLE_DEVICES),
// several (all the server's whole GPUs, or a count: the submit's `gpus`, one data-parallel rank
// per GPU, MIG-split GPUs not counted; the agent picks the closest free set), one particular
// GPU or particular GPUs ticked in the list (the submit's `gpu`: the job waits for those), or
// "CPU"; the list shows
// which GPUs there are and how much memory each has free now. A server without GPUs (no NVIDIA
// driver, or none installed: a normal state) shows "CPU only".
#include <QString>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/net/api_client.h"

class QComboBox;
class QLabel;
class QListWidget;
class QTimer;

namespace crucible::ui {

// "GPU 0 · NVIDIA A100 · 79.0 GiB free of 80.0 GiB · 87 % busy · 61 °C"
QString describe_gpu(const net::GpuInfo& gpu);

class GpuPicker : public QWidget {
    Q_OBJECT
  public:
    explicit GpuPicker(QWidget* parent = nullptr, int refresh_ms = 3000);

    // The agent to ask; none when there is none (GPUs unknown). Asks at once when visible.
    void set_endpoint(std::optional<net::RemoteEndpoint> endpoint);
    // Asks the agent once, in the background (skipped while an answer is pending).
    void refresh();
    void set_refresh_interval(int ms);

    // True once the agent answered for the current endpoint.
    bool known() const { return known_; }
    const net::GpuReport& listing() const { return listing_; }
    // The lines of the GPU list as shown.
    QStringList gpu_lines() const;
    QString status_text() const;
    // True when the run should get a GPU (one is there and "CPU" is not chosen).
    bool use_gpu() const;
    // The person's choice of the CPU (a server without GPUs uses the CPU without it).
    bool cpu_chosen() const { return cpu_chosen_; }
    void choose_cpu(bool cpu);
    // The `gpus` count for the job submit: 1 for a GPU, N for N GPUs, 0 for the CPU; none while
    // unknown.
    std::optional<int> submit_gpus() const;
    // Chooses `count` GPUs (1: a free GPU); more than the server's whole GPUs falls back to 1.
    void choose_gpu_count(int count);
    // How many of the listed GPUs are whole (not split into MIG slices).
    int whole_gpus() const;
    // The one GPU (agent index) chosen for the job, if the person picked one.
    std::optional<int> submit_gpu() const;
    // The particular GPUs (agent indices) chosen for the job: one picked, or those ticked in the
    // list; empty when the server chooses.
    std::vector<int> submit_gpu_list() const;
    // Picks GPU `index` of the listing (as choosing "GPU <index> only" in the list does).
    void choose_gpu(std::optional<int> index);
    // Picks these whole GPUs, one rank each (as ticking them in the list does).
    void choose_gpus(std::vector<int> indices);

  signals:
    // The person changed the choice (not emitted by choose_cpu).
    void choice_changed();
    // An answer (or an error) of the agent arrived and is shown.
    void refreshed();

  protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;

  private:
    void show_listing();
    void show_error(const QString& error);

    std::optional<net::RemoteEndpoint> endpoint_;
    int generation_ = 0;  // answers for an endpoint that was replaced are dropped
    bool busy_ = false;
    bool known_ = false;
    // The server refused this endpoint's token (or slows down its address): no more asking on
    // the timer until the endpoint changes, so a wrong token is not sent again and again.
    bool refused_ = false;
    bool cpu_chosen_ = false;        // the person's choice; "CPU only" servers show CPU regardless
    std::optional<int> pinned_gpu_;  // "GPU <n> only", while that GPU is listed
    std::vector<int> ticked_;        // two or more whole GPUs ticked in the list, ascending
    int gpu_count_ = 1;              // "All N GPUs" / "K GPUs": ranks, one per GPU
    net::GpuReport listing_;
    QComboBox* choice_ = nullptr;
    QListWidget* list_ = nullptr;
    QLabel* status_ = nullptr;
    QTimer* timer_ = nullptr;
};

}  // namespace crucible::ui
