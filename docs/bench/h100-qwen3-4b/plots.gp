# drawn by infer bench-serve --report from results.jsonl; run with: cd DIR && gnuplot plots.gp
set terminal pngcairo size 1000,720 noenhanced
set grid
set key below
set output 'latency_throughput.png'
set title 'End-to-end latency (p50) against output throughput, request-rate sweeps'
set xlabel 'output tokens/s'
set ylabel 'ms'
set logscale y
plot 'plots/series0.dat' using 1:2 with linespoints title 'infer cuda, graphs full, rate sweep sharegpt'
unset logscale y
set output 'ttft_cdf_baseline.png'
set title 'Time to first token, baseline (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_baseline_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_baseline_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_baseline_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_baseline_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_baseline_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'itl_cdf_baseline.png'
set title 'Inter-token latency, baseline (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_baseline_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_baseline_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_baseline_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_baseline_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_baseline_0.itl.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'ttft_cdf_continuous_batching.png'
set title 'Time to first token, continuous_batching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_continuous_batching_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'itl_cdf_continuous_batching.png'
set title 'Inter-token latency, continuous_batching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_continuous_batching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_continuous_batching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_continuous_batching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_continuous_batching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_continuous_batching_0.itl.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'ttft_cdf_paged_attention.png'
set title 'Time to first token, paged_attention (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_paged_attention_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_paged_attention_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_paged_attention_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_paged_attention_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_paged_attention_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'itl_cdf_paged_attention.png'
set title 'Inter-token latency, paged_attention (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_paged_attention_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_paged_attention_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_paged_attention_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_paged_attention_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_paged_attention_0.itl.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'ttft_cdf_chunked_prefill.png'
set title 'Time to first token, chunked_prefill (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_chunked_prefill_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_chunked_prefill_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_chunked_prefill_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_chunked_prefill_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_chunked_prefill_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'itl_cdf_chunked_prefill.png'
set title 'Inter-token latency, chunked_prefill (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_chunked_prefill_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_chunked_prefill_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_chunked_prefill_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_chunked_prefill_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_chunked_prefill_0.itl.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'ttft_cdf_prefix_caching.png'
set title 'Time to first token, prefix_caching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_prefix_caching_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'itl_cdf_prefix_caching.png'
set title 'Inter-token latency, prefix_caching (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_prefix_caching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_none_prefix_caching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_prefix_caching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_prefix_caching_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_prefix_caching_0.itl.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'ttft_cdf_sharegpt.png'
set title 'Time to first token, sharegpt (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_sharegpt_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_4.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, 4 req/s', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_16.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, 16 req/s', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_64.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, 64 req/s', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, all at once', \
     'samples/infer_cuda__graphs_none_sharegpt_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_sharegpt_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_sharegpt_0.ttft.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_sharegpt_0.ttft.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'itl_cdf_sharegpt.png'
set title 'Inter-token latency, sharegpt (cumulative)'
set xlabel 'ms'
set ylabel 'fraction'
set logscale x
plot 'samples/infer_cuda__graphs_full_sharegpt_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, all at once', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_4.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, 4 req/s', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_16.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, 16 req/s', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_64.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, 64 req/s', \
     'samples/infer_cuda__graphs_full__rate_sweep_sharegpt_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, rate sweep, all at once', \
     'samples/infer_cuda__graphs_none_sharegpt_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, all at once', \
     'samples/infer_cuda__graphs_full__no_prefix_cache_sharegpt_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs full, no prefix cache, all at once', \
     'samples/infer_cuda__graphs_none__no_prefix_cache_sharegpt_0.itl.tsv' using 1:2 with lines title 'infer cuda, graphs none, no prefix cache, all at once', \
     'samples/llama.cpp_cuda_sharegpt_0.itl.tsv' using 1:2 with lines title 'llama.cpp cuda, all at once'
unset logscale x
set output 'workloads.png'
set title 'Output throughput per workload (best run)'
set xlabel ''
set ylabel 'output tokens/s'
set style data histograms
set style histogram clustered
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -20
plot for [c=2:7] 'plots/workloads.dat' using c:xtic(1) title columnheader(c)
