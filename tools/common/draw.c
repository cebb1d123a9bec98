typedef int draw_placeholder;
